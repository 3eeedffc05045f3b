import Logging
import Synchronization

extension RunLoop {
    /// Adds `observer` to `mode` (or every common mode, with ``Mode/common``). Safe from any thread.
    ///
    /// An observer belongs to one loop: adding it to another is ignored (and logged, the first time on
    /// this loop). Added during a
    /// notification, it is first called for a later activity.
    public func add(_ observer: RunLoopObserver, forMode mode: Mode = .default) {
        guard observer.isValid else { return }
        guard observer.attachment.claim(for: self) else {
            warnOfForeignItem("observer \(observer.label ?? "") is added to another run loop; not added")
            return
        }
        let stillAttached = lock.withLock { () -> Bool in
            guard !tornDownLocked else { return false }
            if mode == .common {
                if !commonItems.observers.contains(where: { $0 === observer }) { commonItems.observers.append(observer) }
                for common in commonModeList { insertObserverLocked(observer, into: common) }
            } else {
                insertObserverLocked(observer, into: mode)
            }
            return !observer.modes.isEmpty
        }
        if !stillAttached { observer.attachment.release() }
        if !observer.isValid { removeEverywhere(observer) }
    }

    /// Removes `observer` from `mode`. With ``Mode/common``: an observer added to ``Mode/common`` leaves
    /// every common mode; one never added there stays where it is. Safe from any thread.
    public func remove(_ observer: RunLoopObserver, forMode mode: Mode = .default) {
        let detached = lock.withLock { () -> Bool in
            if mode == .common {
                guard commonItems.remove(observer) else { return false }
                for common in commonModeList { removeObserverLocked(observer, from: common) }
            } else {
                removeObserverLocked(observer, from: mode)
            }
            return observer.modes.isEmpty
        }
        if detached { observer.attachment.release(ifClaimedBy: self) }
    }

    /// Whether `observer` is in `mode`. Safe from any thread.
    public func contains(_ observer: RunLoopObserver, forMode mode: Mode = .default) -> Bool {
        lock.withLock {
            if mode == .common { return commonItems.observers.contains { $0 === observer } }
            return observer.modes.contains(mode) && observer.attachment.isClaimed(by: self)
        }
    }

    func insertObserverLocked(_ observer: RunLoopObserver, into mode: Mode) {
        lock.assertHeld()
        guard observer.isValid, !observer.modes.contains(mode), let store = storeLocked(mode) else { return }
        store.insertObserver(observer)
        observer.modes.append(mode)
    }

    func removeObserverLocked(_ observer: RunLoopObserver, from mode: Mode) {
        lock.assertHeld()
        guard let position = observer.modes.firstIndex(of: mode) else { return }
        observer.modes.remove(at: position)
        modes[mode]?.removeObserver(observer)
    }

    /// Invalidation path; takes the lock.
    func removeEverywhere(_ observer: RunLoopObserver) {
        lock.withLock {
            for mode in observer.modes { modes[mode]?.removeObserver(observer) }
            observer.modes.removeAll()
            _ = commonItems.remove(observer)
        }
        observer.attachment.release(ifClaimedBy: self)
    }
}

extension RunLoop {
    /// Logs the first timer or observer added here while another loop holds it; later ones on this
    /// loop are ignored silently, as CF ignores every one: a program that makes the mistake in a loop
    /// would otherwise write a line per add. Any thread. Returns whether it logged.
    @discardableResult
    func warnOfForeignItem(_ what: @autoclosure () -> String) -> Bool {
        guard !loggedForeignItem.exchange(true, ordering: .relaxed) else { return false }
        Self.logger.warning("\(what()) (further such adds to this run loop are not logged)")
        return true
    }
}
