import Synchronization

/// Everything one mode of one loop holds. Guarded by the loop lock, except `readyPorts` and the
/// backend's dispatch state, which only the loop thread touches.
final class ModeStore {
    let mode: RunLoop.Mode
    /// The loop the store belongs to.
    let loopID: ObjectIdentifier
    let backend: ModeBackend
    var sources: [RunLoopSource] = []
    /// Port registrations by source, and by descriptor number (to spot stale ones): a daemon holds
    /// thousands of sockets, and adding or removing one must not scan the others.
    private(set) var ports: [ObjectIdentifier: PortRegistration] = [:]
    private(set) var portsByDescriptor: [Int32: [PortRegistration]] = [:]
    /// Sorted by order; equal orders keep insertion order.
    var observers: [RunLoopObserver] = []
    /// Union of the activities the mode's observers ever asked for (only grows, like CFRunLoop's),
    /// read without the lock so an unobserved activity costs one load.
    private let observedMask = Atomic<UInt32>(0)
    /// Changed only through `insertTimer`, `removeTimer`, `repositionTimer` and `removeAllTimers`,
    /// which keep `earliestDeadline` current. Unchecked exclusivity for the reason given in
    /// RunLoopTimer: the loop lock guards it.
    @exclusivity(unchecked) private(set) var timers: TimerHeap
    /// The earliest timer deadline (`.max` with no timer), readable without the lock: the loop skips
    /// its timer pass with one load when nothing can be due (a source-only mode never takes the lock
    /// for timers). A timer added from another thread concurrently is seen on the next pass; such an
    /// add re-arms the mode's kernel timer, which wakes the loop.
    let earliestDeadline = Atomic<UInt64>(.max)
    /// Deadline of the activation waiting in this mode; `.max` when none or unbounded.
    var runDeadline: UInt64 = .max
    /// Port registrations with readiness not yet performed (loop thread only).
    var readyPorts: [PortRegistration] = []
    /// A spare buffer swapped with `readyPorts` so steady-state dispatch does not allocate.
    var spareReadyPorts: [PortRegistration] = []

    init(mode: RunLoop.Mode, wakePort: WakeUpPort, loopID: ObjectIdentifier) throws(RunLoopError) {
        self.mode = mode
        self.loopID = loopID
        self.backend = try ModeBackend(wakePort: wakePort)
        // Its own identity is not available before every property is set; fixed just below.
        self.timers = TimerHeap(owner: ObjectIdentifier(backend))
        backend.store = self
        timers = TimerHeap(owner: ObjectIdentifier(self))
    }

    deinit {
        // Give back the heap's references (teardown normally empties it first).
        for timer in timers.removeAll() { timer.clearMemberships() }
    }

    /// Sources, ports and timers keep a mode alive; observers do not. Pending blocks are checked by the
    /// loop, which owns the block queue.
    var hasItems: Bool { !sources.isEmpty || !ports.isEmpty || !timers.isEmpty }

    func registration(for source: RunLoopPortSource) -> PortRegistration? {
        ports[ObjectIdentifier(source)]
    }

    func insertPort(_ registration: PortRegistration) {
        ports[ObjectIdentifier(registration.source)] = registration
        portsByDescriptor[registration.source.fileDescriptor, default: []].append(registration)
    }

    func removePort(_ registration: PortRegistration) {
        let key = ObjectIdentifier(registration.source)
        guard ports[key] === registration else { return }
        ports[key] = nil
        let fd = registration.source.fileDescriptor
        portsByDescriptor[fd]?.removeAll { $0 === registration }
        if portsByDescriptor[fd]?.isEmpty == true { portsByDescriptor[fd] = nil }
    }

    func removeAllPorts() {
        ports.removeAll()
        portsByDescriptor.removeAll()
    }

    func insertObserver(_ observer: RunLoopObserver) {
        let index = observers.firstIndex { $0.order > observer.order } ?? observers.endIndex
        observers.insert(observer, at: index)
        observedMask.bitwiseOr(observer.activities.rawValue, ordering: .relaxed)
    }

    @inline(__always)
    func observes(_ activity: RunLoop.Activity) -> Bool {
        observedMask.load(ordering: .relaxed) & activity.rawValue != 0
    }

    // MARK: timers (caller holds the loop lock)

    func insertTimer(_ timer: RunLoopTimer) {
        timers.insert(timer, store: self)
        publishEarliest()
    }

    func removeTimer(_ timer: RunLoopTimer) {
        timers.remove(timer)
        publishEarliest()
    }

    func repositionTimer(_ timer: RunLoopTimer) {
        timers.reposition(timer)
        publishEarliest()
    }

    /// Empties the heap (teardown); returns its timers, whose membership records the caller clears.
    func removeAllTimers() -> [RunLoopTimer] {
        defer { publishEarliest() }
        return timers.removeAll()
    }

    @inline(__always)
    private func publishEarliest() {
        earliestDeadline.store(timers.earliestDeadline, ordering: .releasing)
    }

    /// The instant the mode must wake: its next timer (with tolerance) or the end of the waiting run.
    var wakeDeadline: UInt64 { min(timers.wakeDeadline(), runDeadline) }

    /// Re-arms the kernel timer if the wake instant moved. Caller holds the loop lock.
    func rearm() { backend.arm(at: wakeDeadline) }
}
