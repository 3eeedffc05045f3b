import Logging
import Synchronization

extension RunLoop {
    /// Runs one activation of `mode` on the calling thread: CFRunLoopRunInMode.
    ///
    /// Each iteration notifies `beforeTimers` and `beforeSources`, runs eligible blocks, performs
    /// signalled custom sources, waits (announced by `beforeWaiting`/`afterWaiting` unless it only
    /// polls), fires due timers, performs ready port sources and runs blocks again. The activation
    /// ends with the first of: a source handled (with `returnAfterSourceHandled`), the timeout, a
    /// ``stop()``, or the mode running out of sources, timers and blocks.
    ///
    /// An empty mode returns ``RunResult/finished`` at once, with no observer callout. A mode that was
    /// never created — nothing was ever added to it, no block queued for it, never made common — is
    /// refused with ``RunLoopError/unknownMode(_:)``: it is almost always a misspelt name
    /// (`run("default")` is not ``Mode/default``), which CFRunLoop would run silently as an empty mode.
    /// May be called from a callout (nested run); the nested activation services only its own mode,
    /// and items in their callout are not re-entered.
    ///
    /// - Parameters:
    ///   - mode: a concrete mode (not ``Mode/common``).
    ///   - timeout: `nil` waits without limit; zero or negative polls once without blocking.
    ///   - returnAfterSourceHandled: return after the first source performed (timers never count).
    /// - Throws: ``RunLoopError/notOwningThread`` off the loop's thread, ``RunLoopError/loopTornDown``
    ///   once that thread has ended, ``RunLoopError/commonModesNotRunnable`` for the pseudo-mode,
    ///   ``RunLoopError/unknownMode(_:)`` for a mode the loop never created.
    @discardableResult
    public func run(
        _ mode: Mode = .default,
        timeout: Duration? = nil,
        returnAfterSourceHandled: Bool = false
    ) throws(RunLoopError) -> RunResult {
        try checkOwnership()
        guard mode != .common else { throw .commonModesNotRunnable }
        if isMain { serviceMainDispatchQueue() }
        let clock = clockStorage  // only this thread writes it
        let isPoll: Bool
        let deadline: UInt64
        if let timeout {
            let nanoseconds = timeout.clampedNanoseconds
            isPoll = nanoseconds <= 0
            deadline = isPoll ? 0 : clock.nowNanoseconds.adding(nanoseconds: nanoseconds)
        } else {
            isPoll = false
            deadline = .max
        }
        let entered = try lock.withLock { () throws(RunLoopError) -> (store: ModeStore, previous: ModeStore?)? in
            guard !tornDownLocked else { return nil }
            guard let store = modes[mode] else { throw .unknownMode(mode) }
            guard !isEmptyLocked(store) else { return nil }
            if activations.isEmpty { wakePort.discardStale() }
            activations.append(Activation(store: store))
            let previous = currentStore
            currentStore = store
            return (store, previous)
        }
        guard let (store, previous) = entered else { return .finished }
        depth += 1
        defer { depth -= 1 }

        notify(store, .entry)
        let result = iterate(store, clock: clock, deadline: deadline, isPoll: isPoll, returnAfterSourceHandled: returnAfterSourceHandled)
        notify(store, .exit)

        lock.withLock {
            if activations.removeLast().stopRequested { pendingStops.subtract(1, ordering: .releasing) }
            currentStore = previous
            if !activations.contains(where: { $0.store === store }) { store.runDeadline = .max }
        }
        return result
    }

    /// Runs the default mode until ``stop()`` is called or the mode has nothing left: CFRunLoopRun.
    /// - Throws: as ``run(_:timeout:returnAfterSourceHandled:)``.
    public func run() throws(RunLoopError) {
        while true {
            let result = try run(.default)
            if result == .stopped || result == .finished { return }
        }
    }

    /// Runs `mode` until `date`, ``stop()``, or the mode has nothing left; returns why it ended.
    /// - Throws: as ``run(_:timeout:returnAfterSourceHandled:)``.
    @discardableResult
    public func run(_ mode: Mode = .default, until date: LoopInstant) throws(RunLoopError) -> RunResult {
        while true {
            let now = self.now
            if now >= date { return .timedOut }
            let result = try run(mode, timeout: date - now)
            if result == .stopped || result == .finished { return result }
        }
    }

    /// The inner loop of one activation (CFRunLoop's __CFRunLoopRun).
    private func iterate(
        _ store: ModeStore, clock: LoopClock, deadline: UInt64, isPoll: Bool, returnAfterSourceHandled: Bool
    ) -> RunResult {
        if takeStopRequest() { return .stopped }
        while true {
            notify(store, .beforeTimers)
            notify(store, .beforeSources)
            runBlocks(for: store)
            var handled = hasSources(store) && performSources(in: store, returnAfterFirst: returnAfterSourceHandled)
            if handled { runBlocks(for: store) }

            let poll = handled || isPoll || !store.readyPorts.isEmpty
            if !poll { notify(store, .beforeWaiting) }
            wait(in: store, clock: clock, polling: poll, deadline: deadline)
            if !poll { notify(store, .afterWaiting) }

            fireTimers(in: store, clock: clock)
            if performPorts(in: store, returnAfterFirst: returnAfterSourceHandled) { handled = true }
            runBlocks(for: store)

            if handled && returnAfterSourceHandled { return .handledSource }
            if isPoll || (deadline != .max && clock.nowNanoseconds >= deadline) { return .timedOut }
            // No stop request and items left: carry on without the lock. A stop requested just after
            // this load also wakes the loop, so the next iteration sees it.
            if pendingStops.load(ordering: .acquiring) == 0 && store.itemCount.load(ordering: .acquiring) > 0 {
                continue
            }
            // Stop, then emptiness: CFRunLoop's order, under one lock.
            let ending: RunResult? = lock.withLock {
                if takeStopRequestLocked() { return .stopped }
                return isEmptyLocked(store) ? .finished : nil
            }
            if let ending { return ending }
        }
    }

    /// A mode is empty when it has no sources, ports or timers and no block waits for it.
    /// Observers do not count. Caller holds the lock.
    func isEmptyLocked(_ store: ModeStore) -> Bool {
        lock.assertHeld()
        if store.hasItems { return false }
        if blocks.isEmpty { return true }
        let isCommon = commonModeList.contains(store.mode)
        return !blocks.contains { $0.matches(store.mode, isCommon: isCommon) }
    }

    private func takeStopRequest() -> Bool {
        lock.withLock { takeStopRequestLocked() }
    }

    private func takeStopRequestLocked() -> Bool {
        lock.assertHeld()
        guard let top = activations.indices.last, activations[top].stopRequested else { return false }
        activations[top].stopRequested = false
        pendingStops.subtract(1, ordering: .releasing)
        return true
    }

    // MARK: waiting

    /// Inlined into `iterate`, its only caller: one call frame fewer per iteration.
    @inline(__always)
    private func wait(in store: ModeStore, clock: LoopClock, polling: Bool, deadline: UInt64) {
        applyBackendChanges()
        let backend = store.backend
        sleeping.store(true, ordering: .releasing)
        defer { sleeping.store(false, ordering: .releasing) }
        if polling {
            // Only port sources need the kernel's word: due timers are found by reading the clock,
            // and a pending wake-up by its flag. Skipping the syscall makes a source-only poll cheap.
            if store.portCount.load(ordering: .acquiring) == 0 {
                wakePort.discardStale()
            } else {
                backend.dispatch(blocking: false)
            }
            return
        }
        switch clock {
        case .system:
            // No timer, no run deadline, the kernel timer disarmed: nothing to arm or compute, so no lock
            // (every wait of a port-only mode). Only this thread writes `runDeadline`; a timer another
            // thread adds meanwhile arms the kernel timer itself, which ends this wait.
            if deadline == .max && store.runDeadline == .max && store.earliestDeadline.load(ordering: .acquiring) == .max
                && backend.armedAt == .max
            {
                backend.dispatch(blocking: true)
                return
            }
            let action = lock.withLock { () -> DueWait in
                store.runDeadline = deadline
                let now = clock.nowNanoseconds
                if store.wakeDeadline > now {
                    store.rearm()
                    return .block
                }
                // Nothing but the wake-up port and the timerfd can be ready in a mode without port
                // sources, and the timerfd only once the instant it is armed at has passed.
                let hasPorts = store.portCount.load(ordering: .relaxed) != 0
                return hasPorts || store.backend.armedAt <= now ? .poll : .skip
            }
            switch action {
            case .block:
                backend.dispatch(blocking: true)
            case .poll:
                // A due timer or a passed deadline needs no kernel timer: arming one in the past and
                // blocking on it costs a timerfd_settime, a wake-up and a read for nothing.
                backend.dispatch(blocking: false)
            case .skip:
                // The epoll poll (a syscall and libevent's pass, a third of a repeating timer's tick)
                // could only drain a pending wake-up, which the flag tells without the kernel.
                wakePort.discardStale()
            }
        case .manual(let manual):
            let wakeAt = lock.withLock {
                store.runDeadline = deadline
                return store.wakeDeadline
            }
            if backend.dispatch(blocking: false) { return }
            if wakeAt <= manual.nowNanoseconds { return }
            if manual.autoAdvances && wakeAt != .max {
                manual.advance(to: LoopInstant(nanoseconds: wakeAt), waking: self)
                return
            }
            backend.dispatch(blocking: true)
        }
    }

    /// How a wait goes when the loop is not only polling.
    private enum DueWait {
        /// Nothing due: arm the kernel timer and sleep.
        case block
        /// Something is due, but port sources or the kernel timer may be ready too: look without blocking.
        case poll
        /// Something is due and only a wake-up could be pending: no syscall.
        case skip
    }

    /// Applies libevent changes that other threads requested (they cannot touch the base themselves).
    /// The common nothing-to-do case is one inlined load, as in `runBlocks`, `fireTimers` and
    /// `performPorts`: a call per check was a tenth of a source-only iteration.
    @inline(__always)
    private func applyBackendChanges() {
        if hasPendingBackendChanges.load(ordering: .acquiring) { applyPendingBackendChanges() }
    }

    private func applyPendingBackendChanges() {
        let failed: [(RunLoopPortSource, Int32)] = lock.withLock {
            hasPendingBackendChanges.store(false, ordering: .releasing)
            var failed: [(RunLoopPortSource, Int32)] = []
            for change in pendingBackendChanges {
                switch change {
                case .watch(let registration):
                    guard registration.isActive, registration.event == nil else { continue }
                    let failure = registration.store.backend.watch(registration)
                    if failure != 0 { failed.append((registration.source, failure)) }
                case .unwatch(let registration):
                    registration.store.backend.unwatch(registration)
                }
            }
            pendingBackendChanges.removeAll(keepingCapacity: true)
            return failed
        }
        for (source, failure) in failed {
            let error = RunLoopError.descriptorRejected(fd: source.fileDescriptor, errno: failure)
            Self.logger.error("port source \(source.label ?? "\(source.fileDescriptor)") invalidated: \(error)")
            source.invalidate()
        }
    }

    // MARK: callouts

    @inline(__always)
    private func notify(_ store: ModeStore, _ activity: Activity) {
        guard store.observes(activity) else { return }
        notifyObservers(store, activity)
    }

    private func notifyObservers(_ store: ModeStore, _ activity: Activity) {
        // This pass's array keeps its observers alive (a nested run may replace the store's copy, never
        // this one), so each observer is used without a retain of its own.
        let observers = store.observersForPass(lock: lock)
        for index in observers.indices {
            Unmanaged.passUnretained(observers[index])._withUnsafeGuaranteedRef { observer in
                notify(observer, of: activity, in: store)
            }
        }
    }

    @inline(__always)
    private func notify(_ observer: RunLoopObserver, of activity: Activity, in store: ModeStore) {
        guard observer.activities.contains(activity), observer.isValid, observer.claimCallout() else { return }
        callOut(.observer, item: observer, label: observer.label, mode: store.mode, clock: clockStorage) {
            observer.callback(observer, activity)
        }
        observer.endCallout()
        if !observer.repeats { observer.invalidate() }
    }

    @inline(__always)
    private func runBlocks(for store: ModeStore) {
        if pendingBlockCount.load(ordering: .acquiring) > 0 { runPendingBlocks(for: store) }
    }

    private func runPendingBlocks(for store: ModeStore) {
        // The pass's blocks move into the loop thread's spare array and the queue keeps its storage, so
        // once both have grown to a busy pass, queuing and running a block allocates nothing — up to
        // 1,024 blocks: a crowd's burst (a block per closed connection) gives its room back. The
        // spare is taken, not borrowed: a block may start a nested run, whose pass needs an array too.
        var runnable: [PendingBlock] = []
        swap(&runnable, &blockScratch)
        lock.withLock {
            if otherModeBlockCount == 0 {
                // Only default-mode blocks wait: all of them run here in the default mode, none elsewhere.
                guard store === defaultStore else { return }
                swap(&runnable, &blocks)
                publishBlockCountLocked()
                return
            }
            let isCommon = commonModeList.contains(store.mode)
            let matching = blocks.count { $0.matches(store.mode, isCommon: isCommon) }
            if matching == blocks.count {
                swap(&runnable, &blocks)
            } else if matching > 0 {
                // Stable in both parts: the pass runs its blocks, and the rest keep waiting, in FIFO order.
                var keptCount = 0
                for index in blocks.indices {
                    if blocks[index].matches(store.mode, isCommon: isCommon) {
                        runnable.append(blocks[index])
                    } else {
                        blocks.swapAt(keptCount, index)
                        keptCount += 1
                    }
                }
                blocks.removeLast(blocks.count - keptCount)
            }
            otherModeBlockCount -= runnable.count { $0.modes != nil }
            publishBlockCountLocked()
        }
        if !runnable.isEmpty {
            let wasRunningBlocks = isRunningBlocks
            isRunningBlocks = true
            // Borrowed from the local array, which nothing else can reach (a nested run started by a
            // block has its own): iterating the array itself retained it and copied each block.
            runnable.withUnsafeBufferPointer { blocks in
                for index in blocks.indices {
                    // The clock read in the autoclosure, only when a callout observer wants it: a copy up
                    // front cost a retain and a release per pass.
                    callOut(
                        .block, item: nil, label: blocks[index].label, mode: store.mode, clock: clockStorage, blocks[index].body)
                }
            }
            isRunningBlocks = wasRunningBlocks
            runnable.removeAll(keepingCapacityUpTo: 1_024)
        }
        // Swapped back, not assigned: an assignment retained the storage and released what it replaced.
        swap(&runnable, &blockScratch)
    }

    /// Whether the sources0 pass has anything to look at: false, without a call, for a mode without
    /// custom sources whose set did not change (a port-only mode, every iteration).
    @inline(__always)
    private func hasSources(_ store: ModeStore) -> Bool {
        !store.loopSources.isEmpty || store.sourcesGeneration.load(ordering: .acquiring) != store.loopSourcesGeneration
    }

    /// The sources0 pass: signalled custom sources in (order, first-signal) order.
    private func performSources(in store: ModeStore, returnAfterFirst: Bool) -> Bool {
        let sources = store.sourcesForPass(lock: lock)
        if sources.isEmpty { return false }
        if sources.count == 1 { return store.withSoleSource { perform($0, in: store) } }
        var batch: [(RunLoopSource, UInt64)] = []
        swap(&batch, &sourceScratch)
        for source in sources {
            let stamp = source.signalStamp.load(ordering: .acquiring)
            if stamp != 0 { batch.append((source, stamp)) }
        }
        if batch.count > 1 {
            batch.sort { $0.0.order < $1.0.order || ($0.0.order == $1.0.order && $0.1 < $1.1) }
        }
        // Unlike CFRunLoop (whose result is that of the last source examined), any performed source
        // makes the iteration "handled".
        var handled = false
        for (source, _) in batch {
            guard perform(source, in: store) else { continue }
            handled = true
            if returnAfterFirst { break }
        }
        // Not `removeAll(keepingCapacity:)`, a generic range replacement: ≈ 460 instructions a pass
        // with two sources on the loop (a task handed to a loop that has one source of its own).
        batch.removeAll(keepingCapacityUpTo: .max)
        if sourceScratch.capacity < batch.capacity { sourceScratch = batch }
        return handled
    }

    /// Takes the source's signal and performs it, unless it was not signalled or was invalidated;
    /// returns whether it performed.
    @inline(__always)
    private func perform(_ source: RunLoopSource, in store: ModeStore) -> Bool {
        guard source.takeSignal(), source.isValid else { return false }
        callOut(.source, item: source, label: source.label, mode: store.mode, clock: clockStorage) { source.performCallout(source) }
        return true
    }

    /// Fires every timer of the mode due now, in (deadline, scheduling) order.
    @inline(__always)
    private func fireTimers(in store: ModeStore, clock: LoopClock) {
        // No timer, or none due: no lock (one atomic load, and a clock read when there are timers).
        let earliest = store.earliestDeadline.load(ordering: .acquiring)
        if earliest == .max { return }
        let now = clock.nowNanoseconds
        if earliest <= now { fireDueTimers(in: store, now: now, clock: clock) }
    }

    private func fireDueTimers(in store: ModeStore, now: UInt64, clock: LoopClock) {
        // One due timer (a chain, a tick) needs no batch arrays: the snapshot is that timer.
        // It is claimed under the lock that found it: one lock pair per fire fewer.
        let sole = lock.withLock { () -> (timer: RunLoopTimer, deadline: UInt64)? in
            guard let timer = store.timers.soleDue(at: now), let deadline = claimLocked(timer, at: now) else { return nil }
            return (timer, deadline)
        }
        if let sole {
            fireClaimed(sole.timer, servicing: sole.deadline, in: store, clock: clock)
            return
        }
        var batch: [TimerHeap.Entry] = []
        swap(&batch, &timerScratch)
        // The snapshot keeps its timers alive (strongly) while the batch runs: callouts may drop them.
        var timers: [RunLoopTimer] = []
        swap(&timers, &timerBatchScratch)
        lock.withLock { store.timers.collectDue(at: now, into: &timers, scratch: &batch) }
        if timerScratch.capacity < batch.capacity { timerScratch = batch }
        // Each timer's wrap-up after its callout and the next timer's claim share one critical section:
        // nothing runs between them, and a lock pair per timer fewer is a tenth of a batch's timer.
        var claimed = timers.isEmpty ? nil : lock.withLock { claimInBatchLocked(timers[0], at: now, clock: clock) }
        for index in timers.indices {
            let next = index + 1 < timers.count ? timers[index + 1] : nil
            if let deadline = claimed {
                claimed = fireClaimed(timers[index], servicing: deadline, in: store, clock: clock, thenClaim: next, at: now)
            } else if let next {
                claimed = lock.withLock { claimInBatchLocked(next, at: now, clock: clock) }
            }
        }
        timers.removeAll(keepingCapacity: true)
        if timerBatchScratch.capacity < timers.capacity { timerBatchScratch = timers }
    }

    /// Claims one timer of the batch for firing, after CFRunLoop's re-check: still valid, due, not in
    /// its callout and still scheduled on this loop. Membership of the running mode is not asked: a timer that an earlier
    /// timer of the batch moved out of this mode, but left in another, still fires in this batch (as in
    /// `__CFRunLoopDoTimer`); one taken out of every mode no longer belongs to the loop and is skipped.
    /// "Due" is against the clock as it reads now, as in CF: an earlier timer of the batch may have
    /// re-dated this one to "now" after time went on. The clock is read only for such a timer, so a
    /// batch still costs one read. Caller holds the lock.
    @inline(__always)
    private func claimInBatchLocked(_ timer: RunLoopTimer, at batchInstant: UInt64, clock: LoopClock) -> UInt64? {
        claimLocked(timer, at: timer.deadline <= batchInstant ? batchInstant : clock.nowNanoseconds)
    }

    /// Marks a due timer as in its callout; returns the deadline being serviced (the next one is
    /// computed from it, whatever the callout re-dates), or nil if the timer may not fire now.
    /// Caller holds the lock.
    @inline(__always)
    private func claimLocked(_ timer: RunLoopTimer, at now: UInt64) -> UInt64? {
        lock.assertHeld()
        guard timer.isValid, !timer.isInCallout, timer.deadline <= now, timer.isScheduled else { return nil }
        timer.isInCallout = true
        timer.wasRedatedInCallout = false
        return timer.deadline
    }

    /// Runs a claimed timer's callout, then re-dates it (repeating) or detaches it (one-shot). With
    /// `next`, claims that timer of the batch in the same critical section and returns what
    /// `claimInBatchLocked` returns for it.
    @discardableResult
    private func fireClaimed(
        _ timer: RunLoopTimer, servicing firingDeadline: UInt64, in store: ModeStore, clock: LoopClock,
        thenClaim next: RunLoopTimer? = nil, at batchInstant: UInt64 = 0
    ) -> UInt64? {
        callOut(.timer, item: timer, label: timer.label, mode: store.mode, clock: clock) { timer.callback(timer) }
        var nextDeadline: UInt64?
        let after = lock.withLock { () -> AfterFire in
            defer { if let next { nextDeadline = claimInBatchLocked(next, at: batchInstant, clock: clock) } }
            timer.isInCallout = false
            guard timer.isValid else { return .nothing }
            guard timer.repeats else {
                // A fired one-shot is invalidated. While it is still in this loop's modes that is done
                // here, under the lock already held, rather than by `invalidate()` (another lock pair
                // and two lookups of the timer's loop).
                guard let home = timer.home, home.store.loopID == ObjectIdentifier(self) else { return .invalidate }
                guard timer.markInvalid() else { return .nothing }
                removeEverywhereLocked(timer)
                return .release
            }
            if timer.wasRedatedInCallout || (!timer.isScheduled && timer.hasDateSetOutsideTheLoop) { return .nothing }
            timer.deadline = Self.nextDeadline(
                after: firingDeadline, interval: timer.intervalNanoseconds, now: clock.nowNanoseconds)
            repositionLocked(timer)
            return .nothing
        }
        switch after {
        case .nothing: break
        case .invalidate: timer.invalidate()
        case .release: timer.attachment.release()
        }
        return nextDeadline
    }

    /// What `fireClaimed` does once the lock is dropped.
    private enum AfterFire {
        case nothing
        /// A one-shot that left this loop's modes in its callout: the general path.
        case invalidate
        /// A one-shot detached under the lock: give up its loop.
        case release
    }

    /// The first instant of the original schedule strictly after `now`: the phase is kept and missed
    /// periods are skipped, never replayed.
    static func nextDeadline(after serviced: UInt64, interval: UInt64, now: UInt64) -> UInt64 {
        guard now >= serviced else { return serviced.adding(nanoseconds: Int64(clamping: interval)) }
        let periods = (now - serviced) / interval + 1
        let (offset, overflow) = periods.multipliedReportingOverflow(by: interval)
        if overflow { return .max }
        let (next, overflow2) = serviced.addingReportingOverflow(offset)
        return overflow2 ? .max : next
    }

    /// Performs the ready port sources of the mode in (order, registration) order.
    @inline(__always)
    private func performPorts(in store: ModeStore, returnAfterFirst: Bool) -> Bool {
        store.readyPorts.isEmpty ? false : performReadyPorts(in: store, returnAfterFirst: returnAfterFirst)
    }

    private func performReadyPorts(in store: ModeStore, returnAfterFirst: Bool) -> Bool {
        // One ready port (a request/response exchange): nothing to sort or hand back.
        if let sole = store.readyPorts.takeSole() { return perform(sole, in: store) }
        var ready = store.spareReadyPorts
        store.spareReadyPorts = []
        store.readyPorts.takeAllInOrder(into: &ready)
        var handled = false
        var index = 0
        while index < ready.count {
            let registration = ready[index]
            index += 1
            guard perform(registration, in: store) else { continue }
            handled = true
            if returnAfterFirst { break }
        }
        if index < ready.count {
            // Still queued: left for the next run, ahead of anything that became ready meanwhile.
            store.readyPorts.prepend(ready[index...])
        }
        ready.removeAll(keepingCapacityUpTo: 1_024)
        store.spareReadyPorts = ready
        return handled
    }

    /// Takes a registration off the ready queue and performs its source, unless it was invalidated or
    /// removed from the mode meanwhile; returns whether it performed.
    @inline(__always)
    private func perform(_ registration: PortRegistration, in store: ModeStore) -> Bool {
        registration.isQueued = false
        let events = PortEvents(rawValue: registration.pendingEvents)
        registration.pendingEvents = 0
        guard registration.source.isValid, registration.isActive else { return false }
        let source = registration.source
        callOut(.port, item: source, label: source.label, mode: store.mode, clock: clockStorage) { source.perform(events) }
        return true
    }
}
