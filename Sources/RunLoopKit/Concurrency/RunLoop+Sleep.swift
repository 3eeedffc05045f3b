import Synchronization

extension RunLoop {
    /// Suspends the calling task for `duration` on this loop's clock, with a one-shot timer in
    /// ``Mode/common``: it ends when the loop next runs a common mode at or after the deadline, so on a
    /// ``ManualClock`` the sleep takes virtual time, and while the loop runs a private mode the sleeper
    /// waits for it to come back.
    ///
    /// Cancelling the task ends the sleep at once with `CancellationError` and removes the timer; a
    /// task already cancelled throws without sleeping. The task resumes on its own executor (on this
    /// loop if it is pinned here). Any task, on any thread.
    /// - Throws: `CancellationError`.
    public func sleep(for duration: Duration) async throws {
        let sleep = LoopSleep()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let timer = RunLoopTimer(after: duration, label: "RunLoop.sleep") { _ in sleep.end(with: .success(())) }
                guard sleep.start(continuation, timer: timer) else { return }
                add(timer, forMode: .common)
            }
        } onCancel: {
            sleep.end(with: .failure(CancellationError()))
        }
    }
}

/// One ``RunLoop/sleep(for:)``: its timer firing and its task's cancellation race to end it, and
/// whichever comes first resumes the task, once.
private final class LoopSleep: Sendable {
    private enum State {
        case idle
        case sleeping(CheckedContinuation<Void, any Error>, RunLoopTimer)
        /// Cancelled before the continuation existed.
        case cancelled
        case ended
    }

    private let state = Mutex(State.idle)

    /// Records the waiting task; false (the task resumed already, with the cancellation) when the task
    /// was cancelled first.
    func start(_ continuation: CheckedContinuation<Void, any Error>, timer: RunLoopTimer) -> Bool {
        let cancelled = state.withLock { state -> Bool in
            guard case .idle = state else { return true }
            state = .sleeping(continuation, timer)
            return false
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
        return !cancelled
    }

    /// Resumes the task with `result` unless it was resumed already; removes the timer.
    func end(with result: Result<Void, any Error>) {
        let sleeping = state.withLock { state -> (CheckedContinuation<Void, any Error>, RunLoopTimer)? in
            switch state {
            case .idle:
                state = .cancelled
                return nil
            case .sleeping(let continuation, let timer):
                state = .ended
                return (continuation, timer)
            case .cancelled, .ended:
                return nil
            }
        }
        guard let (continuation, timer) = sleeping else { return }
        timer.invalidate()
        continuation.resume(with: result)
    }
}
