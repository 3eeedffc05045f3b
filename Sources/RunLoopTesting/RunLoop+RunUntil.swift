import RunLoopKit

extension RunLoop {
    /// Runs `mode` until `condition` holds or `timeout` passes, without the test sleeping: on a
    /// ``ManualClock`` the timeout is virtual. The condition is checked before the run and at the start
    /// of every iteration and before every wait, on the loop's thread.
    ///
    /// - Returns: whether the condition held when the run ended (false on timeout, or when the mode had
    ///   nothing left to run).
    /// - Throws: as ``RunLoop/run(_:timeout:returnAfterSourceHandled:)``.
    @discardableResult
    public func runUntil(
        in mode: Mode = .default, timeout: Duration, _ condition: @escaping () -> Bool
    ) throws(RunLoopError) -> Bool {
        if condition() { return true }
        let watcher = RunLoopObserver(activities: [.beforeTimers, .beforeWaiting], order: .max, label: "runUntil") {
            _, _ in if condition() { RunLoop.current.stop() }
        }
        add(watcher, forMode: mode)
        defer { watcher.invalidate() }
        let deadline = now + timeout
        while !condition() {
            let remaining = deadline - now
            if remaining <= .zero { break }
            let result = try run(mode, timeout: remaining)
            if result == .finished { break }
        }
        return condition()
    }
}
