// libFuzzer's driver, as declared in compiler-rt's FuzzerInterface.h. The Swift entry point calls it
// instead of linking libFuzzer's own `main`: SwiftPM links every executable with `main` aliased to the
// module's entry point, so libFuzzer's `main` never runs.
#pragma once
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));
