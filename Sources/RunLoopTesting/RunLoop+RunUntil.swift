public import RunLoopKit

extension RunLoop {
    /// Runs `mode` until `condition` holds or `timeout` passes, without the test sleeping: on a
    /// ``ManualClock`` the timeout is virtual. The condition is checked before the run and at the start
    /// of every iteration and before every wait, on the loop's thread. Time in which the loop could not
    /// run (a stalled process) does not count against `timeout`, up to `timeout` again.
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
        var deadline = StallTolerantDeadline(from: now, limit: timeout)
        while !condition() {
            let start = now
            let remaining = deadline.end - start
            if remaining <= .zero { break }
            // Runs of at most a second: a stall is told from a wait by how late a run comes back.
            let slice = min(remaining, .seconds(1))
            let result = try run(mode, timeout: slice)
            if result == .finished { break }
            deadline.waited(from: start, asked: slice, until: now)
        }
        return condition()
    }
}
