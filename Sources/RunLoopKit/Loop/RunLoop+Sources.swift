import Logging
import Synchronization

extension RunLoop {
    /// Adds a custom source to `mode` (or every common mode, with ``Mode/common``). Safe from any thread.
    ///
    /// The source's `schedule` callout runs on the calling thread once for each concrete mode it newly
    /// joins. Adding twice to a mode is a no-op; adding an invalidated source is ignored.
    public func add(_ source: RunLoopSource, forMode mode: Mode = .default) {
        guard source.isValid else { return }
        let scheduled: [Mode] = lock.withLock {
            guard !tornDownLocked else { return [] }
            let scheduled: [Mode]
            if mode == .common {
                if !commonItems.sources.contains(where: { $0 === source }) { commonItems.sources.append(source) }
                scheduled = commonModeList.filter { insertSourceLocked(source, into: $0) }
            } else {
                scheduled = insertSourceLocked(source, into: mode) ? [mode] : []
            }
            if !scheduled.isEmpty { source.noteAttached(to: self) }
            return scheduled
        }
        finishAdding(source, scheduled: scheduled)
    }

    /// Removes a custom source from `mode`; its `cancel` callout runs once per mode left. With
    /// ``Mode/common``: a source added to ``Mode/common`` leaves every common mode (explicit
    /// registrations there included); one never added there stays where it is. Safe from any thread.
    public func remove(_ source: RunLoopSource, forMode mode: Mode = .default) {
        let removed: [Mode] = lock.withLock {
            let removed: [Mode]
            if mode == .common {
                guard commonItems.remove(source) else { return [] }
                removed = commonModeList.filter { removeSourceLocked(source, from: $0) }
            } else {
                removed = removeSourceLocked(source, from: mode) ? [mode] : []
            }
            if !removed.isEmpty { noteDetachedIfGoneLocked(source) }
            return removed
        }
        finishRemoving(source, removed: removed)
    }

    /// Whether a custom source is in `mode`. Safe from any thread.
    public func contains(_ source: RunLoopSource, forMode mode: Mode = .default) -> Bool {
        lock.withLock {
            if mode == .common { return commonItems.sources.contains { $0 === source } }
            return modes[mode]?.sources.contains { $0 === source } ?? false
        }
    }

    /// Starts watching a port source in `mode` (or every common mode, with ``Mode/common``).
    /// Safe from any thread; from another thread the loop is woken to start watching.
    /// - Throws: ``RunLoopError/itemInvalidated``, ``RunLoopError/invalidDescriptor(_:)`` (closed since the
    ///   source was made), ``RunLoopError/descriptorRejected(fd:errno:)``, ``RunLoopError/loopTornDown``.
    public func add(_ source: RunLoopPortSource, forMode mode: Mode = .default) throws(RunLoopError) {
        guard source.isValid else { throw .itemInvalidated }
        try RunLoopPortSource.checkPollable(source.fileDescriptor)
        invalidateStaleSources(sharing: source)
        let immediate = isCurrentThread
        let scheduled: [Mode] = try lock.withLock { () throws(RunLoopError) -> [Mode] in
            guard !tornDownLocked else { throw .loopTornDown }
            let targets = mode == .common ? commonModeList : [mode]
            var added: [PortRegistration] = []
            do throws(RunLoopError) {
                for target in targets {
                    if let registration = try insertPortLocked(source, into: target, immediate: immediate) {
                        added.append(registration)
                    }
                }
            } catch {
                for registration in added { detachPortLocked(registration, immediate: immediate) }
                throw error
            }
            if mode == .common { commonItems.ports.insert(PortByIdentity(source)) }
            if !added.isEmpty { source.noteAttached(to: self) }
            return added.map(\.store.mode)
        }
        finishAdding(source, scheduled: scheduled)
        if !immediate && !scheduled.isEmpty { wakeUp() }
    }

    /// Stops watching a port source in `mode`. With ``Mode/common``: a source added to ``Mode/common``
    /// leaves every common mode; one never added there stays where it is. Safe from any thread. On the
    /// loop's thread the descriptor is no longer watched when this returns.
    public func remove(_ source: RunLoopPortSource, forMode mode: Mode = .default) {
        let immediate = isCurrentThread
        let removed: [Mode] = lock.withLock {
            let removed: [Mode]
            if mode == .common {
                guard commonItems.remove(source) else { return [] }
                removed = commonModeList.filter { removePortLocked(source, from: $0, immediate: immediate) }
            } else {
                removed = removePortLocked(source, from: mode, immediate: immediate) ? [mode] : []
            }
            if !removed.isEmpty { noteDetachedIfGoneLocked(source) }
            return removed
        }
        finishRemoving(source, removed: removed)
    }

    /// Whether a port source is in `mode`. Safe from any thread.
    public func contains(_ source: RunLoopPortSource, forMode mode: Mode = .default) -> Bool {
        lock.withLock {
            if mode == .common { return commonItems.ports.contains(PortByIdentity(source)) }
            return modes[mode]?.registration(for: source) != nil
        }
    }

    /// Adds `mode` to the common set, creating the mode if needed: every item added to ``Mode/common``
    /// joins it, now and later, and running it before anything joined returns
    /// ``RunResult/finished`` as for any empty mode. There is no way to take a mode out of the common
    /// set. Safe from any thread.
    public func addCommonMode(_ mode: Mode) {
        guard mode != .common else { return }
        let immediate = isCurrentThread
        let (sources, ports): ([RunLoopSource], [RunLoopPortSource]) = lock.withLock {
            guard !tornDownLocked, !commonModeList.contains(mode) else { return ([], []) }
            commonModeList.append(mode)
            // As CFRunLoop: a common mode exists, so running it is not mistaken for a misspelt name.
            _ = storeLocked(mode)
            let items = commonItems
            if items.timers.isEmpty && items.sources.isEmpty && items.ports.isEmpty && items.observers.isEmpty {
                return ([], [])
            }
            // Oldest first, so equal deadlines keep their scheduling order in the new mode too.
            for timer in items.timers.values.sorted(by: { $0.sequence < $1.sequence }) { insertTimerLocked(timer, into: mode) }
            for observer in items.observers { insertObserverLocked(observer, into: mode) }
            // A common item taken out of every mode it was in (removed from the default mode alone) left
            // the loop's list; it is back on the loop now.
            let sources = items.sources.filter { insertSourceLocked($0, into: mode) }
            for source in sources { source.noteAttached(to: self) }
            var ports: [RunLoopPortSource] = []
            for member in items.ports {
                let port = member.source
                do {
                    if try insertPortLocked(port, into: mode, immediate: immediate) != nil {
                        port.noteAttached(to: self)
                        ports.append(port)
                    }
                } catch {
                    Self.logger.error("port source \(port.label ?? "\(port.fileDescriptor)") not added to common mode \(mode): \(error)")
                }
            }
            return (sources, ports)
        }
        for source in sources { source.scheduleCallout?(self, mode) }
        for port in ports { port.scheduleCallout?(self, mode) }
        if !immediate && !ports.isEmpty { wakeUp() }
    }

    // MARK: internals

    /// A source whose descriptor was closed without invalidating it still occupies the descriptor number
    /// in libevent's map; a new source on the reused number would never be registered with epoll and
    /// would wait forever. Such stale sources are recognised by their file identity and invalidated.
    private func invalidateStaleSources(sharing source: RunLoopPortSource) {
        let current = DescriptorIdentity(of: source.fileDescriptor)
        let stale: [RunLoopPortSource] = lock.withLock {
            var stale: [RunLoopPortSource] = []
            for store in modes.values {
                var next = store.ports.chain(for: source.fileDescriptor)
                while let registration = next {
                    next = registration.nextInBucket
                    let other = registration.source
                    if other.fileDescriptor == source.fileDescriptor, other !== source, other.identity != current,
                        !stale.contains(where: { $0 === other })
                    {
                        stale.append(other)
                    }
                }
            }
            return stale
        }
        for old in stale {
            Self.logger.warning(
                "descriptor \(old.fileDescriptor) was closed while port source \(old.label ?? "") watched it; that source is invalidated")
            old.invalidate()
        }
    }

    /// The callouts of an add whose locked section put the source into `scheduled` (and this loop on its
    /// list).
    private func finishAdding(_ source: RunLoopSourceBase, scheduled: [Mode]) {
        guard !scheduled.isEmpty else { return }
        for mode in scheduled { source.scheduleCallout?(self, mode) }
        // An invalidation racing with this add may have missed this loop; finish its job.
        if !source.isValid {
            for mode in removeEverywhere(source) { source.cancelCallout?(self, mode) }
        }
    }

    private func finishRemoving(_ source: RunLoopSourceBase, removed: [Mode]) {
        for mode in removed { source.cancelCallout?(self, mode) }
    }

    /// Takes this loop off the source's list if no mode holds the source any more: in the critical
    /// section that removed it, so the list never names a loop that does not hold the source (the
    /// list's references are unretained, see ``SourceLoops``). Caller holds the lock.
    private func noteDetachedIfGoneLocked(_ source: RunLoopSourceBase) {
        if !holdsLocked(source) { source.noteDetached(from: self) }
    }

    private func holdsLocked(_ source: RunLoopSourceBase) -> Bool {
        lock.assertHeld()
        return modes.values.contains { store in
            if let port = source as? RunLoopPortSource { return store.registration(for: port) != nil }
            return store.sources.contains { $0 === source }
        }
    }

    func insertSourceLocked(_ source: RunLoopSource, into mode: Mode) -> Bool {
        lock.assertHeld()
        guard source.isValid, let store = storeLocked(mode), !store.sources.contains(where: { $0 === source }) else {
            return false
        }
        store.appendSource(source)
        return true
    }

    func removeSourceLocked(_ source: RunLoopSource, from mode: Mode) -> Bool {
        lock.assertHeld()
        guard let store = modes[mode], let index = store.sources.firstIndex(where: { $0 === source }) else { return false }
        store.removeSource(at: index)
        return true
    }

    /// Returns the new registration, or nil if the source is already in the mode.
    func insertPortLocked(_ source: RunLoopPortSource, into mode: Mode, immediate: Bool) throws(RunLoopError) -> PortRegistration? {
        lock.assertHeld()
        guard source.isValid else { return nil }
        guard let store = storeLocked(mode) else { throw .resourceUnavailable("run-loop mode \(mode)") }
        guard store.registration(for: source) == nil else { return nil }
        let registration = PortRegistration(source: source, store: store, sequence: nextPortSequence)
        nextPortSequence += 1
        if immediate {
            let failure = store.backend.watch(registration)
            if failure != 0 { throw .descriptorRejected(fd: source.fileDescriptor, errno: failure) }
        } else {
            pendingBackendChanges.append(.watch(registration))
            hasPendingBackendChanges.store(true, ordering: .releasing)
        }
        store.insertPort(registration)
        return registration
    }

    func removePortLocked(_ source: RunLoopPortSource, from mode: Mode, immediate: Bool) -> Bool {
        lock.assertHeld()
        guard let store = modes[mode], let registration = store.registration(for: source) else {
            return false
        }
        detachPortLocked(registration, immediate: immediate)
        return true
    }

    /// Takes a registration out of its mode and stops watching (now on the loop thread, else deferred).
    func detachPortLocked(_ registration: PortRegistration, immediate: Bool) {
        lock.assertHeld()
        registration.isActive = false
        registration.store.removePort(registration)
        if immediate {
            registration.store.backend.unwatch(registration)
        } else {
            pendingBackendChanges.append(.unwatch(registration))
            hasPendingBackendChanges.store(true, ordering: .releasing)
        }
    }

    /// Invalidation path (any thread); takes the lock. Returns the modes the source left.
    func removeEverywhere(_ source: RunLoopSourceBase) -> [Mode] {
        let immediate = isCurrentThread
        let removed: [Mode] = lock.withLock {
            var removed: [Mode] = []
            if let custom = source as? RunLoopSource {
                _ = commonItems.remove(custom)
                for (mode, _) in modes where removeSourceLocked(custom, from: mode) { removed.append(mode) }
            } else if let port = source as? RunLoopPortSource {
                _ = commonItems.remove(port)
                for (mode, _) in modes where removePortLocked(port, from: mode, immediate: immediate) { removed.append(mode) }
            }
            source.noteDetached(from: self)
            return removed
        }
        return removed
    }
}
