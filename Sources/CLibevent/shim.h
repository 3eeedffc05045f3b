#ifndef CLIBEVENT_SHIM_H
#define CLIBEVENT_SHIM_H
// The only door to libevent. RunLoopKit's Backend/ folder is the only Swift code that imports it.
#include <event2/event.h>
#endif
