import RunLoopKit
import RunLoopTesting

/// Under the thread sanitizer, waits until `loop` sleeps — so the task that handed over a continuation
/// has reached its await — before another thread resumes it. Outside the sanitizer it returns at once:
/// the resume races the await, as a real caller's does.
///
/// Why: a continuation resumed before its task awaits lets the task go on inline
/// (`swift_continuation_await` in the Swift runtime's Task.cpp sees it resumed and calls the task's
/// parent context directly). The runtime tells the sanitizer of the resume (`_swift_tsan_release` in
/// `resumeTaskAfterContinuation`), but that inline path has no matching `_swift_tsan_acquire`, only an
/// atomic acquire load inside the uninstrumented runtime, so the task's next write to its continuation
/// context is reported as a race with `resume()`'s read: a false report. A task that hopped through a
/// new job at each resume passed `swift_job_run`, which acquires; one that hops inline — what the
/// loop's serial role (`LoopSerialExecutor`) makes possible, as SwiftNIO's executors do — meets the gap.
func waitForTheAwaitUnderThreadSanitizer(on loop: RunLoop) {
    guard isRunningUnderThreadSanitizer else { return }
    while !loop.isWaiting { sleep(milliseconds: 0) }
}
