import Synchronization

extension RunLoop {
    /// Ends the innermost running activation, which returns ``RunResult/stopped`` (unless it handled a
    /// source with `returnAfterSourceHandled` or timed out in the same iteration). Ignored when the loop
    /// is not running. Safe from any thread: a sleeping loop is woken.
    public func stop() {
        let running = lock.withLock { () -> Bool in
            guard let top = activations.indices.last else { return false }
            requestStopLocked(top)
            return true
        }
        if running { wakePort.wake() }
    }

    /// Ends every running activation of the loop, innermost first: each returns
    /// ``RunResult/stopped`` when control comes back to it (unless it handles a source with
    /// `returnAfterSourceHandled` or times out first). Ignored when the loop is not running. Safe from
    /// any thread.
    ///
    /// ``stop()`` ends only the innermost activation, as CFRunLoopStop does, which is what a modal run
    /// wants; a daemon shutting down (on SIGTERM, say) usually wants this instead, so that a stop that
    /// lands during a nested run does not leave the outer run going.
    public func stopAll() {
        let running = lock.withLock { () -> Bool in
            for index in activations.indices { requestStopLocked(index) }
            return !activations.isEmpty
        }
        if running { wakePort.wake() }
    }

    /// Ends the activation at `index` (0 the outermost) when control comes back to it, as ``stopAll()``
    /// does for each; ignored when no such activation runs. For a caller that must end its own run
    /// although nested runs may be on top of it (``run(_:untilComplete:)``). Loop thread only.
    func stop(activationAt index: Int) {
        lock.withLock {
            if index < activations.count { requestStopLocked(index) }
        }
    }

    /// How many activations run now: the index the next run's activation will have. Loop thread only.
    var activationCount: Int { lock.withLock { activations.count } }

    private func requestStopLocked(_ index: Int) {
        lock.assertHeld()
        guard !activations[index].stopRequested else { return }
        activations[index].stopRequested = true
        pendingStops.add(1, ordering: .releasing)
    }

    /// Wakes the loop if it is waiting, so it re-checks signalled sources, blocks, stop requests and
    /// deadlines. A wake-up alone does not end an activation. A wake-up while the loop is not running
    /// has no effect on a later run. Safe from any thread.
    ///
    /// The cross-thread hand-off is "publish, then wake": ``RunLoopSource/signal()`` or add the item
    /// first, then call this. Work published before the wake-up is never missed.
    public func wakeUp() {
        wakePort.wake()
    }

    /// Queues `block` to run on the loop's thread the next time the loop runs one of `modes`
    /// (``Mode/common`` matches every common mode). Blocks run in FIFO order at fixed points of an
    /// iteration; a pending block keeps its mode alive. Safe from any thread.
    ///
    /// Unlike CFRunLoopPerformBlock, a block queued from another thread also wakes the loop, so it never
    /// sits until something else happens. From the loop's own thread no wake-up is made: a block queued
    /// from a timer, source or observer callout runs before the loop sleeps, but one queued from inside
    /// a block waits for the loop's next wake-up, as in CFRunLoop (docs/BEHAVIOUR.md §9.13).
    /// ``performFromLoopThread(inModes:label:_:)`` does not wait then.
    /// - Parameters:
    ///   - modes: the modes the block may run in.
    ///   - label: a name for traces and stall reports.
    ///   - block: the work; runs on the loop's thread.
    public func perform(
        inModes modes: [Mode] = Mode.defaultOnly, label: String? = nil, _ block: @escaping @Sendable () -> Void
    ) {
        let queued = lock.withLock { () -> Bool in
            guard !tornDownLocked, !modes.isEmpty else { return false }
            // The default mode's store is made with the loop and never removed: a default-only block (the
            // usual hand-off) needs no look-up, nor a comparison with the common pseudo-mode's name.
            let defaultOnly = modes.count == 1 && modes[0] == .default
            if !defaultOnly {
                for mode in modes where mode != .common { _ = storeLocked(mode) }
                otherModeBlockCount += 1
            }
            blocks.append(PendingBlock(modes: defaultOnly ? nil : modes, label: label, body: block))
            publishBlockCountLocked()
            return true
        }
        if queued && !isCurrentThread { wakePort.wake() }
    }

    /// Queues `block` exactly like ``perform(inModes:label:_:)``, for a caller on the loop's own thread:
    /// the block is not `@Sendable`, so it may capture and mutate state that lives on this thread (a
    /// local `var`, a loop-confined object) — it runs on this same thread, later, at a block point of an
    /// iteration in one of `modes`. One difference from `perform`: queued from inside a block, it does
    /// not wait for the loop's next wake-up (§9.13) but wakes the loop, so deferred work never sits
    /// until some timer or socket happens to wake it.
    ///
    /// Use it to defer work from a callout ("after this event is handled"); from any other thread use
    /// ``perform(inModes:label:_:)``, whose `@Sendable` requirement is what keeps such state from
    /// crossing threads.
    /// - Throws: ``RunLoopError/notOwningThread`` when called off the loop's thread (nothing is queued),
    ///   ``RunLoopError/loopTornDown`` once the thread has ended.
    public func performFromLoopThread(
        inModes modes: [Mode] = Mode.defaultOnly, label: String? = nil, _ block: @escaping () -> Void
    ) throws(RunLoopError) {
        try checkOwnership()
        // Queued from this thread (checked above), run and released on it: nothing crosses threads.
        let confined = LoopBound(block, loop: self)
        perform(inModes: modes, label: label) { confined.value() }
        // From inside a block, the new block would wait for the loop's next wake-up (§9.13): deferred
        // work (a callback after the owner's call, a presence announcement) must not sit until some
        // timer or socket happens to wake the loop.
        if isRunningBlocks { wakeUp() }
    }
}
