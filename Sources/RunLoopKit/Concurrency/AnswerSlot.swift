import Synchronization

/// One awaited answer that exactly one of two racers settles: whoever produces the answer (a timer,
/// a server's reply, a delivery report) or the waiting task's cancellation. The first wins; later
/// results are dropped. The bridge every callback API of the package crosses to become `async`.
///
/// The answer may come before the task awaits it (it is kept), and a task cancelled before it awaits
/// ends at once with `CancellationError`. Any thread.
package final class AnswerSlot<Success: Sendable>: Sendable {
    private enum State {
        case waitingForTask
        case waiting(CheckedContinuation<Success, any Error>)
        /// Settled before the task awaited.
        case settled(Result<Success, any Error>)
        case ended
    }

    private let state = Mutex(State.waitingForTask)

    package init() {}

    /// Ends the wait with `result` unless it has ended already; true when this call ended it.
    @discardableResult
    package func settle(with result: Result<Success, any Error>) -> Bool {
        let waiter = state.withLock { state -> CheckedContinuation<Success, any Error>?? in
            switch state {
            case .waitingForTask:
                state = .settled(result)
                return .some(nil)
            case .waiting(let continuation):
                state = .ended
                return .some(continuation)
            case .settled, .ended:
                return nil
            }
        }
        guard let waiter else { return false }
        waiter?.resume(with: result)
        return true
    }

    /// The answer, or `CancellationError` when the calling task is cancelled first. Await it once.
    /// Runs on the caller's executor (an actor on a loop stays on the loop).
    nonisolated(nonsending) package func value() async throws -> Success {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Success, any Error>) in
                let early = state.withLock { state -> Result<Success, any Error>? in
                    switch state {
                    case .waitingForTask:
                        state = .waiting(continuation)
                        return nil
                    case .settled(let result):
                        state = .ended
                        return result
                    case .waiting, .ended:
                        preconditionFailure("AnswerSlot awaited twice")
                    }
                }
                if let early { continuation.resume(with: early) }
            }
        } onCancel: {
            settle(with: .failure(CancellationError()))
        }
    }
}
