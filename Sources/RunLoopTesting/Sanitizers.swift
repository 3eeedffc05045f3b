#if canImport(Glibc)
import Glibc
#endif

/// Whether this process runs under the thread sanitizer (`swift test --sanitize=thread`), whose runtime
/// exports `__tsan_init`. Volume tests (100 MB backlogs, thousands of sockets or logins) check
/// single-loop behaviour, not thread safety; under the sanitizer's 5–15× slowdown they take minutes and
/// starve the suites that run beside them, so they opt out with `.disabled(if:)` and run in the plain pass.
public let isRunningUnderThreadSanitizer: Bool = dlsym(nil, "__tsan_init") != nil

/// Whether this process runs under AddressSanitizer (`swift test --sanitize=address`), whose runtime
/// exports `__asan_init`. The mass-disconnect crowds (5,000 logins in one pass) did not get all online
/// within 180 s beside the other suites under it on two cores, though they take 11 s alone there and
/// 4 s in the plain pass (2026-11-27; the cause is not found) — they run in the plain pass.
public let isRunningUnderAddressSanitizer: Bool = dlsym(nil, "__asan_init") != nil
