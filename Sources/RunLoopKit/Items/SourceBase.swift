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
        // Retained while the list is held: a loop's teardown must take the list to leave it, so none of
        // these can go before the calls below.
        let attached = withLoops { loops -> [RunLoop] in
            defer { loops = SourceLoops() }
            return loops.retained
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

    /// Records that `loop` holds the source. Called with `loop`'s lock held, in the same critical section
    /// that put the source into one of its modes (see ``SourceLoops`` for why).
    func noteAttached(to loop: RunLoop) {
        withLoops { $0.add(loop) }
    }

    /// Records that `loop` no longer holds the source. Called with `loop`'s lock held, in the same
    /// critical section that took the source out of its last mode there.
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

    /// How many loops hold the source (tests).
    var attachedLoopCount: Int {
        withLoops { ($0.first == nil ? 0 : 1) + $0.others.count }
    }

    /// Calls `body` with each loop the source is scheduled on, under the source's lock (`body` must
    /// not call back into the source): no array per call.
    func forEachAttachedLoop(_ body: (RunLoop) -> Void) {
        withLoops { loops in
            if let first = loops.first { first._withUnsafeGuaranteedRef(body) }
            for other in loops.others { other._withUnsafeGuaranteedRef(body) }
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
///
/// Unretained, not weak: a weak reference to a loop gives the loop a side table, and every retain and
/// release of an object with one takes the Swift runtime's slow path — each `loop.perform` from another
/// thread paid it twice. It is safe because a loop is on the list exactly while it holds the source in
/// one of its modes: a loop adds itself in the critical section (its lock) that puts the source into
/// a mode, and removes itself in the one that takes the source out of its last mode, teardown's
/// included; a loop is freed only after its teardown (its thread's reference goes last), and a torn-down
/// loop adds nothing. Whoever uses an entry holds the list (the source's flag), which a loop's teardown
/// must take to leave it, so the loop cannot be freed meanwhile; ``retained`` hands out counted
/// references for use after the list is let go.
struct SourceLoops {
    var first: Unmanaged<RunLoop>?
    var others: [Unmanaged<RunLoop>] = []

    /// Every loop on the list, each retained. Call with the list held.
    var retained: [RunLoop] {
        var loops: [RunLoop] = []
        if let first { loops.append(first.takeUnretainedValue()) }
        for other in others { loops.append(other.takeUnretainedValue()) }
        return loops
    }

    mutating func add(_ loop: RunLoop) {
        let entry = Unmanaged.passUnretained(loop)
        guard let first else {
            first = entry
            return
        }
        if first.toOpaque() == entry.toOpaque() || others.contains(where: { $0.toOpaque() == entry.toOpaque() }) { return }
        others.append(entry)
    }

    /// Removes `loop`; the oldest remaining entry moves inline.
    mutating func remove(_ loop: RunLoop) {
        let address = Unmanaged.passUnretained(loop).toOpaque()
        if !others.isEmpty { others.removeAll { $0.toOpaque() == address } }
        if first?.toOpaque() == address {
            first = others.isEmpty ? nil : others.removeFirst()
        }
    }
}
