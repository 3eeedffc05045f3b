import Synchronization

/// Everything one mode of one loop holds. Guarded by the loop lock, except `readyPorts`, the
/// `loop…` copies and the backend's dispatch state, which only the loop thread touches. The mutable
/// stored properties have unchecked exclusivity, for the reason given on RunLoop's.
final class ModeStore {
    let mode: RunLoop.Mode
    /// The loop the store belongs to.
    let loopID: ObjectIdentifier
    let backend: ModeBackend
    /// Changed only through `appendSource`, `removeSource(at:)` and `removeAllSources()`.
    @exclusivity(unchecked) private(set) var sources: [RunLoopSource] = []
    /// Bumped on every change of `sources`, so the loop thread refreshes its own copy
    /// (`loopSources`) only when the set changed instead of copying it under the lock every pass.
    let sourcesGeneration = Atomic<UInt64>(0)
    /// Loop thread only: `sources` as of `loopSourcesGeneration`. Unchecked exclusivity: one thread
    /// ever touches it, and the check would cost a runtime call per pass.
    @exclusivity(unchecked) var loopSources: [RunLoopSource] = []
    @exclusivity(unchecked) var loopSourcesGeneration: UInt64 = 0
    /// Loop thread only: sole-source callouts of this mode under way (a nested run may start another).
    /// While one is, a refresh keeps the `loopSources` copy it replaces here instead of releasing it:
    /// that copy is what keeps the performing source alive, which the loop does not retain itself.
    @exclusivity(unchecked) var soleSourceCallouts = 0
    @exclusivity(unchecked) var retiredLoopSources: [[RunLoopSource]] = []
    /// Port registrations, found by source or by descriptor number (to spot stale ones) without a scan:
    /// a daemon holds thousands of sockets, and adding or removing one must not visit the others.
    @exclusivity(unchecked) private(set) var ports = PortTable()
    /// Sorted by order; equal orders keep insertion order. Changed only through `insertObserver`,
    /// `removeObserver` and `removeAllObservers`; the loop thread notifies from its own copy, as for
    /// sources.
    @exclusivity(unchecked) private(set) var observers: [RunLoopObserver] = []
    let observersGeneration = Atomic<UInt64>(0)
    @exclusivity(unchecked) var loopObservers: [RunLoopObserver] = []
    @exclusivity(unchecked) var loopObserversGeneration: UInt64 = 0
    /// Union of the activities the mode's observers ever asked for (only grows, like CFRunLoop's),
    /// read without the lock so an unobserved activity costs one load.
    private let observedMask = Atomic<UInt32>(0)
    /// Changed only through `insertTimer`, `removeTimer`, `repositionTimer` and `removeAllTimers`,
    /// which keep `earliestDeadline` current. Guarded by the loop lock.
    let timers: TimerQueue
    /// The earliest timer deadline (`.max` with no timer), readable without the lock: the loop skips
    /// its timer pass with one load when nothing can be due (a source-only mode never takes the lock
    /// for timers). A timer added from another thread concurrently is seen on the next pass; such an
    /// add re-arms the mode's kernel timer, which wakes the loop.
    let earliestDeadline = Atomic<UInt64>(.max)
    /// Deadline of the activation waiting in this mode; `.max` when none or unbounded.
    @exclusivity(unchecked) var runDeadline: UInt64 = .max
    /// How many sources, ports and timers the mode holds, and how many ports, readable without the
    /// lock: an iteration asks "still not empty?" and "any descriptor to poll?" with a load each.
    /// Written under the lock after each change.
    let itemCount = Atomic<Int>(0)
    let portCount = Atomic<Int>(0)
    /// Port registrations with readiness not yet performed. Loop thread only, hence unchecked
    /// exclusivity (as `loopSources`).
    @exclusivity(unchecked) var readyPorts = ReadyPortQueue()
    /// Where a pass with several ready ports sorts them, kept so steady-state dispatch does not allocate.
    @exclusivity(unchecked) var spareReadyPorts: [PortRegistration] = []

    init(mode: RunLoop.Mode, wakePort: WakeUpPort, loopID: ObjectIdentifier) throws(RunLoopError) {
        self.mode = mode
        self.loopID = loopID
        self.backend = try ModeBackend(wakePort: wakePort)
        // Its own identity is not available before every property is set; fixed just below.
        self.timers = TimerQueue(owner: ObjectIdentifier(backend))
        backend.store = self
        timers.adopt(owner: ObjectIdentifier(self))
    }

    deinit {
        // Give back the heap's references (teardown normally empties it first).
        for timer in timers.removeAll() { timer.clearMemberships() }
    }

    /// Sources, ports and timers keep a mode alive; observers do not. Pending blocks are checked by the
    /// loop, which owns the block queue.
    var hasItems: Bool { !sources.isEmpty || !ports.isEmpty || !timers.isEmpty }

    func registration(for source: RunLoopPortSource) -> PortRegistration? {
        ports.registration(for: source)
    }

    func insertPort(_ registration: PortRegistration) {
        ports.insert(registration)
        publishCounts()
    }

    func removePort(_ registration: PortRegistration) {
        guard ports.remove(registration) else { return }
        publishCounts()
    }

    func removeAllPorts() {
        ports.removeAll()
        publishCounts()
    }

    // MARK: custom sources (caller holds the loop lock)

    func appendSource(_ source: RunLoopSource) {
        sources.append(source)
        sourcesChanged()
    }

    func removeSource(at index: Int) {
        sources.remove(at: index)
        sourcesChanged()
    }

    func removeAllSources() {
        sources.removeAll()
        sourcesChanged()
    }

    private func sourcesChanged() {
        sourcesGeneration.add(1, ordering: .releasing)
        publishCounts()
    }

    /// The mode's custom sources, for the loop thread: its own copy, refreshed under the lock only
    /// after a change. A source removed by another thread after the generation was read may still be
    /// performed in this pass, exactly as with a copy taken under the lock just before it.
    @inline(__always)
    func sourcesForPass(lock: Lock) -> [RunLoopSource] {
        if sourcesGeneration.load(ordering: .acquiring) != loopSourcesGeneration {
            let retired = lock.withLock {
                defer {
                    loopSources = sources
                    loopSourcesGeneration = sourcesGeneration.load(ordering: .relaxed)
                }
                return loopSources
            }
            if soleSourceCallouts > 0 {
                retiredLoopSources.append(retired)
            } else {
                releaseAfterTheLock(retired)
            }
        }
        return loopSources
    }

    /// Runs `body` with the sole source of `loopSources`, not retained: one retain and release, two
    /// locked instructions, fewer per pass. Safe because only `sourcesForPass` replaces `loopSources`,
    /// and while `body` runs it keeps the replaced copy, which holds the source, until the outermost
    /// such callout has returned.
    @inline(__always)
    func withSoleSource<Result>(_ body: (RunLoopSource) -> Result) -> Result {
        soleSourceCallouts += 1
        let result = Unmanaged.passUnretained(loopSources[0])._withUnsafeGuaranteedRef(body)
        soleSourceCallouts -= 1
        if soleSourceCallouts == 0 && !retiredLoopSources.isEmpty { retiredLoopSources.removeAll() }
        return result
    }

    /// The mode's observers, for the loop thread: as `sourcesForPass(lock:)`.
    @inline(__always)
    func observersForPass(lock: Lock) -> [RunLoopObserver] {
        if observersGeneration.load(ordering: .acquiring) != loopObserversGeneration {
            let retired = lock.withLock {
                defer {
                    loopObservers = observers
                    loopObserversGeneration = observersGeneration.load(ordering: .relaxed)
                }
                return loopObservers
            }
            releaseAfterTheLock(retired)
        }
        return loopObservers
    }

    func insertObserver(_ observer: RunLoopObserver) {
        let index = observers.firstIndex { $0.order > observer.order } ?? observers.endIndex
        observers.insert(observer, at: index)
        observersGeneration.add(1, ordering: .releasing)
        observedMask.bitwiseOr(observer.activities.rawValue, ordering: .relaxed)
    }

    func removeObserver(_ observer: RunLoopObserver) {
        observers.removeAll { $0 === observer }
        observersGeneration.add(1, ordering: .releasing)
    }

    func removeAllObservers() {
        observers.removeAll()
        observersGeneration.add(1, ordering: .releasing)
    }

    @inline(__always)
    func observes(_ activity: RunLoop.Activity) -> Bool {
        observedMask.load(ordering: .relaxed) & activity.rawValue != 0
    }

    // MARK: timers (caller holds the loop lock)

    func insertTimer(_ timer: RunLoopTimer) {
        timers.insert(timer, store: self)
        publishEarliest()
        publishCounts()
    }

    /// Returns false (and changes nothing) if the timer is not in this mode.
    @discardableResult
    func removeTimer(_ timer: RunLoopTimer) -> Bool {
        guard timers.remove(timer) else { return false }
        publishEarliest()
        publishCounts()
        return true
    }

    func repositionTimer(_ timer: RunLoopTimer) {
        timers.reposition(timer)
        publishEarliest()
    }

    /// Empties the heap (teardown); returns its timers, whose membership records the caller clears.
    func removeAllTimers() -> [RunLoopTimer] {
        defer {
            publishEarliest()
            publishCounts()
        }
        return timers.removeAll()
    }

    @inline(__always)
    private func publishEarliest() {
        earliestDeadline.store(timers.earliestDeadline, ordering: .releasing)
    }

    @inline(__always)
    private func publishCounts() {
        itemCount.store(sources.count + ports.count + timers.count, ordering: .releasing)
        portCount.store(ports.count, ordering: .releasing)
    }

    /// The instant the mode must wake: its next timer (with tolerance) or the end of the waiting run.
    var wakeDeadline: UInt64 { min(timers.wakeDeadline(), runDeadline) }

    /// Re-arms the kernel timer if the wake instant moved. Caller holds the loop lock.
    func rearm() { backend.arm(at: wakeDeadline) }

    /// The loop thread's previous copy may hold the last reference to a removed item, whose closure may
    /// own something that uses this loop in its deinit (a client invalidating its timer): letting it go
    /// under the loop's lock would take that lock again on the same thread and hang.
    @inline(never)
    private func releaseAfterTheLock<Items>(_ retired: consuming [Items]) {
        withExtendedLifetime(retired) {}
    }
}
