import Synchronization

extension RunLoop {
    /// Runs `mode` on the calling thread until `operation`, started as a task on this loop, completes;
    /// returns its result or rethrows its error. The bridge from a thread's `main` (or a test) into
    /// async code whose tasks and actors live on this loop:
    ///
    /// ```swift
    /// let loop = RunLoop.current
    /// let reply = try loop.run {
    ///     try await loop.sleep(for: .milliseconds(50))
    ///     return "done"
    /// }
    /// ```
    ///
    /// The operation runs with this loop as its task executor, so its non-isolated code runs on the
    /// loop's thread between callouts; timers, sources and blocks of `mode` keep running meanwhile.
    /// Until the operation completes the mode cannot run empty, and ``stop()`` ends only the current
    /// activation: another starts, since there is no result to return yet. Cancel the operation (from
    /// within, or through what it awaits) to end it early.
    ///
    /// Loop thread only. May be called from a callout (a nested run), but not from code that itself
    /// runs as a job of this loop: jobs do not run re-entrantly, so the operation could never start.
    /// - Parameters:
    ///   - mode: a common mode (the default mode, or one added with ``addCommonMode(_:)``): executor
    ///     jobs run only there.
    ///   - operation: the work; its result must be `Sendable`, as it may be produced on another
    ///     executor the operation hops to.
    /// - Throws: the operation's error; ``RunLoopError/notOwningThread``,
    ///   ``RunLoopError/loopTornDown``, ``RunLoopError/commonModesNotRunnable``,
    ///   ``RunLoopError/notACommonMode(_:)`` or ``RunLoopError/insideExecutorJob`` for misuse (the
    ///   operation is not started then).
    public func run<Success: Sendable>(
        _ mode: Mode = .default,
        untilComplete operation: sending @escaping () async throws -> Success
    ) throws -> Success {
        try checkOwnership()
        guard mode != .common else { throw RunLoopError.commonModesNotRunnable }
        guard commonModes.contains(mode) else { throw RunLoopError.notACommonMode(mode) }
        guard !jobs.isDraining else { throw RunLoopError.insideExecutorJob }

        let outcome = Mutex<Result<Success, any Error>?>(nil)
        // This run's activation, whatever nested runs may lie on top of it when the operation ends.
        let activation = activationCount
        // Keeps the mode from running empty while the operation waits on other threads, and ends this
        // run (not a nested one) once the operation has completed: signalled from whatever thread
        // completes it, performed here.
        let completion = RunLoopSource(label: "run(untilComplete:)") { [unowned self] _ in stop(activationAt: activation) }
        add(completion, forMode: mode)
        defer { completion.invalidate() }
        Task(executorPreference: self) {
            let result: Result<Success, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            completion.signalAndWakeUp()
        }
        while true {
            if let result = outcome.withLock({ $0 }) { return try result.get() }
            try run(mode)
        }
    }
}
