#if canImport(Glibc)
import Glibc
#endif

/// Whether this process runs under AddressSanitizer (`swift test --sanitize=address`, as
/// Scripts/asan.sh runs the suites), whose runtime exports `__asan_init`.
public let isRunningUnderAddressSanitizer: Bool = dlsym(nil, "__asan_init") != nil

/// Whether this process runs under either sanitizer `.ci/run` uses: the thread sanitizer or
/// AddressSanitizer.
public let isRunningUnderSanitizer: Bool = isRunningUnderThreadSanitizer || isRunningUnderAddressSanitizer

/// The size of a test's workload: `plain` in the plain pass (`swift test`), `sanitized` under a
/// sanitizer. Call it from the test's own thread, at any time.
///
/// Why: the differential and randomised tests of single-threaded code (a timer queue against a
/// reference model, a thousand rooms paged, a crowd of sessions on a manual clock) are sized so that
/// the plain pass, which CI runs too, meets a rare wrong answer. A sanitizer judges memory accesses and
/// threads, not answers: it sees a bad access on the first pass through a path, and at its 2–15×
/// slowdown the plain sizes cost many minutes of `.ci/run`. The sanitized size must still reach every
/// path the test's own checks require — each test says what its size still covers.
public func scaledUnderSanitizers<Size>(plain: Size, sanitized: Size) -> Size {
    isRunningUnderSanitizer ? sanitized : plain
}
