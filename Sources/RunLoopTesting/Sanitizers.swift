#if canImport(Glibc)
import Glibc
#endif

/// Whether this process runs under the thread sanitizer (`swift test --sanitize=thread`), whose runtime
/// exports `__tsan_init`. Volume tests (100 MB backlogs, thousands of sockets or logins) check
/// single-loop behaviour, not thread safety; under the sanitizer's 5–15× slowdown they take minutes and
/// starve the suites that run beside them, so they opt out with `.disabled(if:)` and run in the plain pass.
public let isRunningUnderThreadSanitizer: Bool = dlsym(nil, "__tsan_init") != nil
