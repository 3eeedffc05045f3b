import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What custom sources (``RunLoopSource``) and port sources (``RunLoopPortSource``) share: an order,
/// validity, schedule/cancel callouts, and the list of loops they are scheduled on (a source may be
/// scheduled in several modes of several loops).
public class RunLoopSourceBase: @unchecked Sendable {
    /// Lower orders are performed first when several sources are ready in one iteration.
    public let order: Int
    /// A name shown in traces and stall reports.
    public let label: String?
    /// Boxed: most sources have neither callout, and two optional closures inline cost every source
    /// 32 bytes; the box costs the few that have them 16 more.
    private let callouts: SourceCallouts?
    // The two flags side by side, and before the word-aligned list, so they share its padding.
    private let valid = Atomic<Bool>(true)
    private let loopsBusy = Atomic<Bool>(false)
    /// The loops the source is on, inline in the source: no lock object, and no array for the usual
    /// single loop. Guarded by `loopsBusy` (see `withLoops`).
    @exclusivity(unchecked) private var loopList = SourceLoops()

    init(
        order: Int,
        label: String?,
        schedule: ((RunLoop, RunLoop.Mode) -> Void)?,
        cancel: ((RunLoop, RunLoop.Mode) -> Void)?
    ) {
        self.order = order
        self.label = label
        self.callouts = schedule == nil && cancel == nil ? nil : SourceCallouts(schedule: schedule, cancel: cancel)
    }

    var scheduleCallout: ((RunLoop, RunLoop.Mode) -> Void)? { callouts?.schedule }
    var cancelCallout: ((RunLoop, RunLoop.Mode) -> Void)? { callouts?.cancel }

    /// False once the source was invalidated.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Removes the source from every mode of every loop for good; its `cancel` callout runs once per
    /// mode, on the calling thread, before this returns. Safe from any thread and from callouts.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        willInvalidate()
        let attached = withLoops { loops -> [RunLoop] in
            defer { loops = SourceLoops() }
            return loops.live
        }
        for loop in attached {
            for mode in loop.removeEverywhere(self) {
                cancelCallout?(loop, mode)
            }
        }
        didInvalidate()
    }

    /// Hooks for subclasses: clear a pending signal, release a signal slot, close a descriptor.
    func willInvalidate() {}
    func didInvalidate() {}

    func noteAttached(to loop: RunLoop) {
        withLoops { $0.add(loop) }
    }

    func noteDetached(from loop: RunLoop) {
        withLoops { $0.remove(loop) }
    }

    /// Runs `body` with the loop list held: a lock of one atomic flag rather than a `Mutex` or a `Lock`.
    /// A `Lock` is two allocations of its own per source; Synchronization's `Mutex` waits in the kernel
    /// (a priority-inheriting futex) when contended, an ordering the thread sanitizer cannot see, so it
    /// reported the list's accesses as races. The sections are a few loads and stores (and the eventfd
    /// writes of `signalAndWakeUp()`), and two threads rarely meet here: a waiter yields its CPU.
    private func withLoops<Result>(_ body: (inout SourceLoops) -> Result) -> Result {
        while loopsBusy.exchange(true, ordering: .acquiring) { sched_yield() }
        defer { loopsBusy.store(false, ordering: .releasing) }
        return body(&loopList)
    }

    /// Calls `body` with each loop the source is scheduled on, under the source's lock (`body` must
    /// not call back into the source): no array per call.
    func forEachAttachedLoop(_ body: (RunLoop) -> Void) {
        withLoops { loops in
            if let first = loops.first { body(first) }
            for other in loops.others { if let loop = other.loop { body(loop) } }
        }
    }
}

private final class SourceCallouts {
    let schedule: ((RunLoop, RunLoop.Mode) -> Void)?
    let cancel: ((RunLoop, RunLoop.Mode) -> Void)?

    init(schedule: ((RunLoop, RunLoop.Mode) -> Void)?, cancel: ((RunLoop, RunLoop.Mode) -> Void)?) {
        self.schedule = schedule
        self.cancel = cancel
    }
}

/// The loops a source is scheduled on, oldest first: the first inline, any others in an array.
struct SourceLoops {
    /// A plain weak reference rather than an optional `WeakLoop`, whose extra tag byte padded to a
    /// word: an empty slot and a dead loop both read nil, and both give way alike.
    weak var first: RunLoop?
    var others: [WeakLoop] = []

    var live: [RunLoop] {
        var loops: [RunLoop] = []
        if let first { loops.append(first) }
        for other in others { if let loop = other.loop { loops.append(loop) } }
        return loops
    }

    mutating func add(_ loop: RunLoop) {
        drop { $0 == nil }
        if first === loop || others.contains(where: { $0.loop === loop }) { return }
        if first == nil { first = loop } else { others.append(WeakLoop(loop)) }
    }

    mutating func remove(_ loop: RunLoop) {
        drop { $0 == nil || $0 === loop }
    }

    /// Removes the records `matches` picks; the oldest remaining one moves inline.
    private mutating func drop(_ matches: (RunLoop?) -> Bool) {
        if !others.isEmpty { others.removeAll { matches($0.loop) } }
        if matches(first) {
            first = others.isEmpty ? nil : others.removeFirst().loop
        }
    }
}
