import Logging

extension RunLoop {
    /// Schedules `timer` in `mode` (or every common mode, with ``Mode/common``). Safe from any thread.
    ///
    /// A timer created with a delay starts counting when it is first added. A timer belongs to one loop:
    /// adding it to another is ignored (and logged, the first time on this loop), as is adding an invalidated timer; adding it twice
    /// to a mode is a no-op. From another thread no wake-up is needed: the mode's kernel timer is re-armed.
    public func add(_ timer: RunLoopTimer, forMode mode: Mode = .default) {
        guard timer.isValid else { return }
        guard timer.attachment.claim(for: self) else {
            warnOfForeignItem("timer \(timer.label ?? "") is scheduled on another run loop; not added")
            return
        }
        // Asked once: each ask is two calls into libc, and the insert needs the answer as well.
        let onLoopThread = isCurrentThread
        let stillAttached = lock.withLock { () -> Bool in
            guard !tornDownLocked else { return false }
            if let last = lastStoreLocked(for: mode) {
                last._withUnsafeGuaranteedRef { insertTimerLocked(timer, into: $0, onLoopThread: onLoopThread) }
            } else if mode == .common {
                commonItems.timers[ObjectIdentifier(timer)] = timer
                for common in commonModeList { insertTimerLocked(timer, into: common) }
            } else {
                insertTimerLocked(timer, into: mode)
            }
            return timer.isScheduled
        }
        if !stillAttached { timer.attachment.release() }
        if !timer.isValid { removeEverywhere(timer) }
        if !onLoopThread && !clock.isSystem { wakeUp() }
    }

    /// Removes `timer` from `mode`. With ``Mode/common``: a timer added to ``Mode/common`` leaves every
    /// common mode; one never added there stays where it is. Safe from any thread.
    public func remove(_ timer: RunLoopTimer, forMode mode: Mode = .default) {
        let detached = lock.withLock { () -> Bool in
            if let last = lastStoreLocked(for: mode) {
                // The mode's store is at hand: the timer's record for it is found by identity, without
                // comparing the mode's name with that of each store the timer is in.
                last._withUnsafeGuaranteedRef { store in
                    if store.removeTimer(timer) { timersChangedLocked(store) }
                }
            } else if mode == .common {
                guard commonItems.remove(timer) else { return false }
                for common in commonModeList { removeTimerLocked(timer, from: common) }
            } else {
                removeTimerLocked(timer, from: mode)
            }
            return !timer.isScheduled
        }
        if detached { timer.attachment.release(ifClaimedBy: self) }
    }

    /// Whether `timer` is scheduled in `mode`. With ``Mode/common``: whether it was added to the
    /// pseudo-mode. Safe from any thread.
    public func contains(_ timer: RunLoopTimer, forMode mode: Mode = .default) -> Bool {
        lock.withLock {
            if mode == .common { return commonItems.timers[ObjectIdentifier(timer)] != nil }
            return modes[mode]?.timers.contains(timer) ?? false
        }
    }

    /// The next fire date of the earliest timer in `mode` (not counting a timer inside its callout),
    /// or `nil` if the mode has no timer.
    public func nextTimerFireDate(forMode mode: Mode = .default) -> LoopInstant? {
        lock.withLock {
            guard let store = modes[mode], let first = store.timers.earliest else { return nil }
            return LoopInstant(nanoseconds: first.deadline)
        }
    }

    // MARK: internals (caller holds the lock unless noted)

    func insertTimerLocked(_ timer: RunLoopTimer, into mode: Mode) {
        // The store is borrowed, not retained (a retain and a release per add).
        _ = withStoreLocked(mode) { store in insertTimerLocked(timer, into: store, onLoopThread: isCurrentThread) }
    }

    private func insertTimerLocked(_ timer: RunLoopTimer, into store: ModeStore, onLoopThread: Bool) {
        lock.assertHeld()
        guard timer.isValid else { return }
        // Unscheduled (the usual add) means in no heap: no lookup.
        if timer.isScheduled && store.timers.contains(timer) { return }
        if !timer.isScheduled {
            // The clock is read only for a delay: a timer re-added, or created for a date, needs none.
            if timer.start == .afterDelay {
                timer.deadline = clockStorage.nowNanoseconds.adding(nanoseconds: Int64(clamping: timer.deadline))
            }
            if timer.hasDateSetOutsideTheLoop && timer.isInCallout { timer.wasRedatedInCallout = true }
            timer.start = .placed
            timer.sequence = nextTimerSequence
            nextTimerSequence += 1
        }
        store.insertTimer(timer)
        // `timersChangedLocked`'s rule, with the thread asked once by the caller.
        if !onLoopThread { store.rearm() }
    }

    func removeTimerLocked(_ timer: RunLoopTimer, from mode: Mode) {
        lock.assertHeld()
        // The timer's own record names its store: no lookup by name, and no reference counting on the
        // store (a retain and two releases per remove when it came from `lastStore`).
        guard let membership = timer.membership(in: mode) else { return }
        membership.withStore { store in
            if store.removeTimer(timer) { timersChangedLocked(store) }
        }
    }

    /// Gives the timer a new place in line (after every timer with the same deadline) in all its modes.
    func repositionLocked(_ timer: RunLoopTimer) {
        lock.assertHeld()
        timer.sequence = nextTimerSequence
        nextTimerSequence += 1
        timer.forEachStore { store in
            store.repositionTimer(timer)
            timersChangedLocked(store)
        }
    }

    /// Re-arms the mode's kernel timer after its timers changed — but only for a change made off the
    /// loop's thread, while the loop may be asleep in that mode. On the loop's thread the loop is not
    /// asleep, and it re-arms before every blocking wait, so one syscall per wait replaces one per change
    /// (a batch of 1,000 one-shot timers would otherwise cost 1,000 timerfd_settime calls).
    /// Caller holds the lock.
    @inline(__always)
    func timersChangedLocked(_ store: ModeStore) {
        lock.assertHeld()
        if !isCurrentThread { store.rearm() }
    }

    /// Invalidation path; takes the lock.
    func removeEverywhere(_ timer: RunLoopTimer) {
        lock.withLock { removeEverywhereLocked(timer) }
        timer.attachment.release(ifClaimedBy: self)
    }

    /// Takes the timer out of every mode and the common items. Caller holds the lock.
    func removeEverywhereLocked(_ timer: RunLoopTimer) {
        lock.assertHeld()
        while let membership = timer.home {
            // Borrowed: `store` would retain and release it.
            membership.withStore { store in
                store.removeTimer(timer)
                timersChangedLocked(store)
            }
        }
        if !commonItems.timers.isEmpty { _ = commonItems.remove(timer) }
    }

    /// `nextFireDate` setter; takes the lock. A past date means "as soon as possible".
    func redate(_ timer: RunLoopTimer, to instant: UInt64) {
        lock.withLock {
            let target = max(instant, clockStorage.nowNanoseconds)
            if !timer.isScheduled {
                timer.start = .atInstant
                timer.deadline = target
                return
            }
            timer.deadline = target
            if timer.isInCallout { timer.wasRedatedInCallout = true }
            repositionLocked(timer)
        }
        if !isCurrentThread && !clock.isSystem { wakeUp() }
    }

    func setTolerance(_ timer: RunLoopTimer, _ nanoseconds: UInt64) {
        lock.withLock {
            timer.toleranceNanoseconds = nanoseconds
            timer.forEachStore { timersChangedLocked($0) }
        }
    }
}
