// Empty: the target only exports its header (SwiftPM wants a source file in every C target).
#include "CFuzzerDriver.h"
