/// One mode's timers in firing order — (deadline, scheduling sequence) — held in two places: a
/// ``TimerLane`` for timers that order after the last one appended to it (O(1) in and out), and a
/// ``TimerHeap`` for the rest. The next timer is the earlier of the lane's first and the heap's root.
///
/// A timer's record for this mode holds its place: a heap index (≥ 0) or `~ticket` for the lane.
///
/// A class, held by its mode store in a `let`: the loop reads the queue on every blocking wait (the
/// wake bound) and every timer pass, and a struct read out of the store's stored property was copied
/// for the call — each of its buffers retained and released, a fifth of a repeating timer's pass.
/// Guarded by the owning loop's lock; the stored properties have unchecked exclusivity for the reason
/// given in RunLoopTimer.
final class TimerQueue {
    @exclusivity(unchecked) private var heap: TimerHeap
    @exclusivity(unchecked) private var lane: TimerLane
    /// The mode store this queue belongs to: a timer's membership records are found by it.
    @exclusivity(unchecked) private(set) var owner: ObjectIdentifier

    /// `usesLane` false (only in tests, which compare the order with the heap alone) closes the lane.
    init(owner: ObjectIdentifier, usesLane: Bool = true) {
        self.owner = owner
        heap = TimerHeap(owner: owner)
        lane = TimerLane(owner: owner, open: usesLane)
    }

    /// Names the store the queue belongs to, which cannot name itself before its properties are set.
    /// Only while the queue is empty.
    func adopt(owner: ObjectIdentifier) {
        precondition(isEmpty, "RunLoopKit: a timer queue changes hands only while empty")
        self.owner = owner
        heap = TimerHeap(owner: owner)
        lane.owner = owner
    }

    deinit { lane.deallocate() }

    @inline(__always)
    var isEmpty: Bool { heap.isEmpty && lane.isEmpty }
    @inline(__always)
    var count: Int { heap.count + lane.count }
    /// How many timers the lane holds (the rest are in the heap).
    var laneCount: Int { lane.count }
    /// The lane's slots in use, tombstones included, and how often it packed them (for tests).
    var laneSpan: Int { lane.span }
    var lanePacks: Int { lane.packs }

    /// The earliest deadline, `.max` when empty.
    @inline(__always)
    var earliestDeadline: UInt64 { min(heap.earliestDeadline, lane.firstDeadline) }

    var earliest: RunLoopTimer? { earliestEntry?.reference.takeUnretainedValue() }

    private var earliestEntry: TimerHeap.Entry? {
        guard let root = heap.first else { return lane.first }
        guard let first = lane.first else { return root }
        return first.precedes(root) ? first : root
    }

    func contains(_ timer: RunLoopTimer) -> Bool { timer.heapIndex(in: owner) != nil }

    /// Schedules a timer not yet in this mode, taking a retain on it.
    @inline(__always)
    func insert(_ timer: RunLoopTimer, store: ModeStore) {
        let deadline = timer.deadline
        let reference = Unmanaged.passRetained(timer)
        if lane.accepts(deadline: deadline, sequence: timer.sequence) {
            timer.addMembership(TimerMembership(store: store, heapIndex: ~lane.nextTicket))
            lane.append(deadline: deadline, sequence: timer.sequence, reference: reference)
        } else {
            timer.addMembership(TimerMembership(store: store, heapIndex: heap.count))
            heap.insert(TimerHeap.Entry(deadline: deadline, reference: reference))
        }
        debugCheck()
    }

    /// Removes the timer and its membership record; false if it is not in this mode. The caller holds
    /// a reference to the timer, so the release here never ends its life (under the loop lock).
    @discardableResult
    @inline(__always)
    func remove(_ timer: RunLoopTimer) -> Bool {
        guard let place = timer.removeMembership(in: owner) else { return false }
        take(at: place).release()
        debugCheck()
        return true
    }

    /// Puts the timer back in order after its deadline or sequence changed. A timer in the lane leaves
    /// it and is placed again: at the lane's back when it still orders last (a repeating timer's
    /// re-arm), else in the heap.
    @inline(__always)
    func reposition(_ timer: RunLoopTimer) {
        guard let place = timer.heapIndex(in: owner) else { return }
        let deadline = timer.deadline
        if place >= 0 {
            heap.reposition(at: place, deadline: deadline)
        } else if !lane.redateLast(~place, deadline: deadline, sequence: timer.sequence) {
            let reference = take(at: place)
            if lane.accepts(deadline: deadline, sequence: timer.sequence) {
                timer.setHeapIndex(~lane.nextTicket, in: owner)
                lane.append(deadline: deadline, sequence: timer.sequence, reference: reference)
            } else {
                timer.setHeapIndex(heap.count, in: owner)
                heap.insert(TimerHeap.Entry(deadline: deadline, reference: reference))
            }
        }
        debugCheck()
    }

    /// Empties the queue, handing its references to the caller (teardown). Membership records are
    /// left for the caller to clear.
    func removeAll() -> [RunLoopTimer] {
        heap.removeAll() + lane.removeAll()
    }

    /// The latest instant the mode may sleep until without firing any timer late: the minimum of
    /// `deadline + tolerance` over timers not in their callout. `UInt64.max` if none.
    @inline(__always)
    func wakeDeadline() -> UInt64 {
        lane.wakeDeadline(below: heap.wakeDeadline())
    }

    /// The only timer due at `now` when there is one and it is not in its callout — the usual case,
    /// which needs no batch — otherwise nil (none due, or several: use `collectDue`).
    @inline(__always)
    func soleDue(at now: UInt64) -> RunLoopTimer? {
        let heapDue = heap.earliestDeadline <= now
        let laneDue = lane.firstDeadline <= now
        if heapDue == laneDue { return nil }
        return heapDue ? heap.soleDue(at: now) : lane.soleDue(at: now)
    }

    /// Appends every due timer not in its callout to `timers`, in firing order (deadline, then
    /// scheduling order), each retained for the batch. `scratch` is the heap walk's queue (emptied
    /// after, its capacity kept). The lane's timers go to `timers` straight, with no entry in between:
    /// a burst of 100,000 zero-delay timers is all lane.
    @inline(__always)
    func collectDue(at now: UInt64, into timers: inout [RunLoopTimer], scratch: inout [TimerHeap.Entry]) {
        let start = timers.count
        heap.collectDue(at: now, into: &scratch)
        for entry in scratch { timers.append(entry.reference.takeUnretainedValue()) }
        scratch.removeAll(keepingCapacity: true)
        let fromHeap = timers.count
        lane.collectDue(at: now, into: &timers)
        // Two sorted runs; the sort (a merge sort that first looks for runs) merges them.
        if fromHeap > start && timers.count > fromHeap {
            timers[start...].sort { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }
        }
    }

    /// Takes the entry at a recorded place out of the heap or the lane, handing its retain over.
    @inline(__always)
    private func take(at place: Int) -> Unmanaged<RunLoopTimer> {
        place >= 0 ? heap.take(at: place) : lane.take(~place)
    }

    // MARK: checks

    /// The heap's and the lane's invariants (order, and every index record pointing back). O(n).
    func checkInvariants() -> Bool { heap.checkInvariants() && lane.checkInvariants() }

    /// Debug builds verify small queues after every mutation (large ones would make it quadratic).
    @inline(__always)
    private func debugCheck() {
        assert(count > 256 || checkInvariants(), "RunLoopKit: timer queue inconsistent")
    }
}
