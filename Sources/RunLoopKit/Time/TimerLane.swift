/// A mode's timers whose keys only grow, kept in a FIFO beside the heap: a timer goes here when it
/// orders after the last one appended (the lane is then sorted by construction), so appending and
/// taking the first cost O(1) where the heap pays a sift over its levels.
///
/// Which timers qualify: zero-delay timers added in a burst, a repeating timer's re-arm, timeouts of
/// one duration re-armed in turn — their deadlines never go backwards. libevent's answer for the same
/// shape is its "common timeouts", a queue per duration that the caller must ask for; this lane takes
/// any timer whose key (deadline, then scheduling sequence: the heap's order) is past the lane's tail,
/// without any API.
///
/// The storage is a ring of slots addressed by *tickets*: a timer's recorded position is its ticket,
/// which stays valid as the head advances and when the ring grows, so neither moves any record.
/// Removing a timer from the middle leaves a tombstone (the slot keeps its deadline, so the slots stay
/// sorted and a walk may stop at the first slot not due); tombstones at either end are dropped at once,
/// and once they outnumber the live slots the lane is packed again (amortised O(1), and the ring never
/// holds more than twice its timers plus a few). Slots hold their timer unretained, as the heap's
/// entries do: the lane owns one retain per live slot.
///
/// Guarded by the owning loop's lock.
struct TimerLane {
    struct Slot {
        var deadline: UInt64
        /// Nil: a tombstone (the timer left, or moved to the back).
        var reference: Unmanaged<RunLoopTimer>?
    }

    /// The ring, a power of two long, through a pointer: a slot read or written is a load or a store,
    /// where an array's subscript checks the bounds and, to write, that the buffer is not shared (a
    /// runtime call), about as much again as the lane's own work per timer. Every index is masked to
    /// the capacity. Slots are trivial values: the memory needs no initialisation or deinitialisation.
    /// A pointer, not a class holding one, keeps the lane a trivial value: the loop's reads of it (the
    /// wake bound before every blocking wait) copy no reference. Its owner, ``TimerQueue``, frees it
    /// (``deallocate()``).
    private var slots: UnsafeMutablePointer<Slot>
    private var mask: Int
    /// The first slot's ticket; that slot is live whenever the lane is not empty.
    private var head = 0
    /// The ticket after the last slot.
    private var tail = 0
    /// Live slots.
    private(set) var count = 0
    /// The key of the last timer appended: a timer ordered after it keeps the lane sorted. Still a
    /// valid bound after that timer left (a removal only takes keys out). An empty lane rests at
    /// `resting`, in both: (0, 0) lets in any key but that one (which the heap then takes: the order
    /// holds either way), so `accepts` need not ask whether the lane is empty; (.max, .max) lets in
    /// none, a lane that is closed.
    private var tailDeadline: UInt64
    private var tailSequence: UInt64
    private let resting: UInt64
    /// The mode store this lane belongs to: a timer's membership records are found by it.
    var owner: ObjectIdentifier

    /// A closed lane (`open` false) takes no timer: its queue is the heap alone (tests compare the two).
    init(owner: ObjectIdentifier, open: Bool = true) {
        self.owner = owner
        slots = Self.allocate(16)
        mask = 15
        resting = open ? 0 : .max
        tailDeadline = resting
        tailSequence = resting
    }

    /// Frees the ring; the lane is not used after. Its owner's deinit.
    func deallocate() { slots.deallocate() }

    /// Left uninitialised: slots are trivial values, written before they are read (only tickets from
    /// `head` to `tail` are ever read). Filling the ring at every doubling was 42 instructions a timer
    /// in a batch of 100,000.
    private static func allocate(_ capacity: Int) -> UnsafeMutablePointer<Slot> {
        UnsafeMutablePointer<Slot>.allocate(capacity: capacity)
    }

    var isEmpty: Bool { count == 0 }
    /// Slots from the first timer to the last, tombstones included (tests bound it).
    var span: Int { tail &- head }
    /// How many times the lane packed itself (tests check that they reached it).
    private(set) var packs = 0

    /// The earliest timer's deadline, `.max` when empty. Kept rather than read from the ring: the store
    /// publishes the mode's earliest deadline after every change.
    private(set) var firstDeadline: UInt64 = .max

    /// The earliest timer, as an entry the heap would hold (the lane's retain stays the lane's).
    var first: TimerHeap.Entry? {
        guard count > 0 else { return nil }
        let slot = slots[head & mask]
        return TimerHeap.Entry(deadline: slot.deadline, reference: slot.reference!)
    }

    /// Whether a timer with this key may be appended: it orders after every timer in the lane.
    @inline(__always)
    func accepts(deadline: UInt64, sequence: UInt64) -> Bool {
        deadline > tailDeadline || (deadline == tailDeadline && sequence > tailSequence)
    }

    /// The ticket the next append gets. Positions recorded in a timer are `~ticket` (negative), which
    /// tells them from heap indices.
    var nextTicket: Int { tail }

    /// Appends a timer that `accepts` admitted, taking over the retain `reference` carries.
    @inline(__always)
    mutating func append(deadline: UInt64, sequence: UInt64, reference: Unmanaged<RunLoopTimer>) {
        if tail &- head > mask { grow() }
        slots[tail & mask] = Slot(deadline: deadline, reference: reference)
        if count == 0 { firstDeadline = deadline }
        tail &+= 1
        count &+= 1
        tailDeadline = deadline
        tailSequence = sequence
    }

    /// Re-dates the last timer where it is when its new key still orders after the slot before it, which
    /// must hold a timer: a repeating timer alone in its mode, re-armed every period, moves nothing.
    @inline(__always)
    mutating func redateLast(_ ticket: Int, deadline: UInt64, sequence: UInt64) -> Bool {
        guard ticket == tail &- 1 else { return false }
        if count > 1 {
            let previous = slots[(ticket &- 1) & mask]
            guard let reference = previous.reference, deadline >= previous.deadline else { return false }
            if deadline == previous.deadline && reference._withUnsafeGuaranteedRef({ $0.sequence }) > sequence { return false }
        }
        slots[ticket & mask].deadline = deadline
        if count == 1 { firstDeadline = deadline }
        tailDeadline = deadline
        tailSequence = sequence
        return true
    }

    /// Takes the timer at `ticket` out, handing its retain to the caller. Inlined for the usual take,
    /// the first timer (a fired one); one from elsewhere goes through `leaveGap`.
    @inline(__always)
    mutating func take(_ ticket: Int) -> Unmanaged<RunLoopTimer> {
        let index = ticket & mask
        let reference = slots[index].reference!
        slots[index].reference = nil
        count &-= 1
        if count == 0 {
            // Empty: the storage is reused from the start, and any key is accepted again.
            head = 0
            tail = 0
            firstDeadline = .max
            tailDeadline = resting
            tailSequence = resting
        } else if ticket == head {
            repeat { head &+= 1 } while slots[head & mask].reference == nil
            firstDeadline = slots[head & mask].deadline
        } else {
            leaveGap(at: ticket)
        }
        return reference
    }

    /// After a take behind the first timer: drops tombstones at the back, or packs the lane once they
    /// outnumber its timers.
    @inline(never)
    private mutating func leaveGap(at ticket: Int) {
        if ticket == tail &- 1 {
            repeat { tail &-= 1 } while slots[(tail &- 1) & mask].reference == nil
            let last = slots[(tail &- 1) & mask]
            tailDeadline = last.deadline
            tailSequence = last.reference!._withUnsafeGuaranteedRef { $0.sequence }
        } else if tail &- head > 2 &* count &+ 16 {
            pack()
        }
    }

    /// Empties the lane, handing its references to the caller (teardown). Membership records are left
    /// for the caller to clear.
    mutating func removeAll() -> [RunLoopTimer] {
        var timers: [RunLoopTimer] = []
        timers.reserveCapacity(count)
        for ticket in head..<tail {
            if let reference = slots[ticket & mask].reference { timers.append(reference.takeRetainedValue()) }
            slots[ticket & mask].reference = nil
        }
        head = 0
        tail = 0
        count = 0
        firstDeadline = .max
        tailDeadline = resting
        tailSequence = resting
        return timers
    }

    /// Appends the due timers not in their callout, retained, in firing order (the lane's own order).
    func collectDue(at now: UInt64, into timers: inout [RunLoopTimer]) {
        var ticket = head
        while ticket != tail {
            let slot = slots[ticket & mask]
            if slot.deadline > now { return }
            if let reference = slot.reference, !reference._withUnsafeGuaranteedRef({ $0.isInCallout }) {
                timers.append(reference.takeUnretainedValue())
            }
            ticket &+= 1
        }
    }

    /// The first timer when it is due at `now`, not in its callout, and the next slot is not due —
    /// otherwise nil. (A due tombstone next also answers nil: the batch path is then taken, which is
    /// always correct.)
    @inline(__always)
    func soleDue(at now: UInt64) -> RunLoopTimer? {
        guard count > 0 else { return nil }
        let first = slots[head & mask]
        guard first.deadline <= now else { return nil }
        if head &+ 1 != tail && slots[(head &+ 1) & mask].deadline <= now { return nil }
        let reference = first.reference!
        if reference._withUnsafeGuaranteedRef({ $0.isInCallout }) { return nil }
        return reference.takeUnretainedValue()
    }

    /// The least `deadline + tolerance` over timers not in their callout, or `bound` if none is lower.
    /// The usual first timer (no tolerance, not in its callout) is the answer itself: every slot after
    /// it is due no earlier.
    @inline(__always)
    func wakeDeadline(below bound: UInt64) -> UInt64 {
        guard count > 0 else { return bound }
        let first = slots[head & mask]
        let (inCallout, tolerance) = first.reference!._withUnsafeGuaranteedRef { ($0.isInCallout, $0.toleranceNanoseconds) }
        if !inCallout && tolerance == 0 { return Swift.min(bound, first.deadline) }
        return walkWakeDeadline(below: bound)
    }

    /// Slots are in deadline order, so the walk stops at the first one not below the best so far.
    private func walkWakeDeadline(below bound: UInt64) -> UInt64 {
        var best = bound
        var ticket = head
        while ticket != tail {
            let slot = slots[ticket & mask]
            if slot.deadline >= best { break }
            if let reference = slot.reference {
                let (inCallout, tolerance) = reference._withUnsafeGuaranteedRef { ($0.isInCallout, $0.toleranceNanoseconds) }
                if !inCallout {
                    let (sum, overflow) = slot.deadline.addingReportingOverflow(tolerance)
                    best = Swift.min(best, overflow ? .max : sum)
                }
            }
            ticket &+= 1
        }
        return best
    }

    // MARK: storage

    /// Doubles the ring. Each slot moves to its ticket's place in the larger ring, so recorded tickets
    /// stay valid.
    @inline(never)
    private mutating func grow() {
        let newMask = (mask &+ 1) &* 2 &- 1
        let larger = Self.allocate(newMask &+ 1)
        for ticket in head..<tail { larger[ticket & newMask] = slots[ticket & mask] }
        slots.deallocate()
        slots = larger
        mask = newMask
    }

    /// Moves the live slots together from the head on, writing each timer's new ticket into its record.
    @inline(never)
    private mutating func pack() {
        var write = head
        for read in head..<tail {
            let slot = slots[read & mask]
            guard let reference = slot.reference else { continue }
            if write != read {
                slots[write & mask] = slot
                reference._withUnsafeGuaranteedRef { $0.setHeapIndex(~write, in: owner) }
            }
            write &+= 1
        }
        for ticket in write..<tail { slots[ticket & mask].reference = nil }
        tail = write
        packs &+= 1
    }

    // MARK: checks

    /// Live slots are in strictly increasing key order after tombstones that keep deadlines sorted, the
    /// first slot is live, the tail key bounds every key, and each timer's record holds its ticket. O(n).
    func checkInvariants() -> Bool {
        if count == 0 { return head == tail && firstDeadline == .max && tailDeadline == resting && tailSequence == resting }
        guard firstDeadline == slots[head & mask].deadline else { return false }
        guard slots[head & mask].reference != nil, slots[(tail &- 1) & mask].reference != nil else { return false }
        var live = 0
        var previous: (deadline: UInt64, sequence: UInt64)?
        var previousDeadline: UInt64 = 0
        for ticket in head..<tail {
            let slot = slots[ticket & mask]
            if slot.deadline < previousDeadline { return false }
            previousDeadline = slot.deadline
            guard let reference = slot.reference else { continue }
            live += 1
            let key = reference._withUnsafeGuaranteedRef { (deadline: $0.deadline, sequence: $0.sequence) }
            let recorded = reference._withUnsafeGuaranteedRef { $0.heapIndex(in: owner) }
            if key.deadline != slot.deadline || recorded != ~ticket { return false }
            if let previous, !(previous < key) { return false }
            previous = key
        }
        guard let last = previous else { return false }
        return live == count && !((tailDeadline, tailSequence) < last)
    }
}
