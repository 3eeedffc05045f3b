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
        try Task.checkCancellation()
        // The timer and the task's cancellation race to end the sleep; the slot lets the first win.
        let wake = AnswerSlot<Void>()
        let timer = RunLoopTimer(after: duration, label: "RunLoop.sleep") { _ in wake.settle(with: .success(())) }
        add(timer, forMode: .common)
        defer { timer.invalidate() }
        try await wake.value()
    }
}
