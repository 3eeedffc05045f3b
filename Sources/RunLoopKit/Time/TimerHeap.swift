/// The timers of a mode that ``TimerLane`` does not take, as a 4-ary min-heap ordered by (deadline,
/// sequence); ``TimerQueue`` holds both. Each timer records its index in every heap it belongs to, so
/// removal and re-dating cost O(log n).
///
/// Four children per node, not two: a fired timer's removal from the root moves one entry and writes
/// one timer's index record per level, and a 4-ary heap has half the levels (7 for 20,000 timers, not
/// 14). Finding the earliest of four children costs three comparisons of inline deadlines where a
/// binary heap pays one per level, which is cheaper than the index record written for the extra level;
/// the four children are 64 contiguous bytes, one cache line, and a sift up (an insert) climbs half
/// as far.
///
/// Entries carry their deadline inline, so sifting compares plain integers (the scheduling sequence, the
/// tie-break, is read from the timer only when two deadlines are equal; 16 bytes per entry instead of
/// 24), and hold their timer
/// unretained: the heap owns one retain per entry, handed over in ``insert(_:)`` and back by
/// ``take(at:)``, so moving an entry during a sift costs no reference counting. (Moving a strong
/// reference retains and releases it: on a heap of 100,000 timers that was most of a removal.)
///
/// Guarded by the owning loop's lock. ``checkInvariants()`` verifies the heap order and every index
/// record; debug builds run it after each mutation of a small heap, and the tests on random workloads.
struct TimerHeap {
    struct Entry {
        var deadline: UInt64
        let reference: Unmanaged<RunLoopTimer>

        @inline(__always)
        func precedes(_ other: Entry) -> Bool {
            if deadline != other.deadline { return deadline < other.deadline }
            return withTimer { mine in other.withTimer { mine.sequence < $0.sequence } }
        }

        /// Reads the timer without retaining it (the heap's retain keeps it alive).
        @inline(__always)
        func withTimer<Result>(_ body: (RunLoopTimer) -> Result) -> Result {
            reference._withUnsafeGuaranteedRef(body)
        }
    }

    private var entries: [Entry] = []
    /// The mode store this heap belongs to: a timer's membership records are found by it.
    let owner: ObjectIdentifier

    init(owner: ObjectIdentifier) { self.owner = owner }

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    /// The earliest deadline, `.max` when empty.
    var earliestDeadline: UInt64 { entries.first?.deadline ?? .max }

    /// Adds an entry, taking over the retain its reference carries. The caller has recorded `count` as
    /// the timer's index for this heap (where the entry lands before any sift).
    @inline(__always)
    mutating func insert(_ entry: Entry) {
        entries.append(entry)
        let index = entries.count - 1
        // An entry that does not precede its parent stays where it landed (a timeout re-armed behind
        // earlier ones, the usual insert): the sift's call and frame are a tenth of an insert and cancel.
        if index == 0 || !entry.precedes(entries[Self.parent(of: index)]) {
            debugCheck()
            return
        }
        siftUp(index)
        debugCheck()
    }

    /// Takes the entry at `index` out, handing its retain to the caller. The caller has removed the
    /// timer's record for this heap.
    @inline(__always)
    mutating func take(at index: Int) -> Unmanaged<RunLoopTimer> {
        let removed = entries[index].reference
        if index != entries.count - 1 { fillHole(index) }
        entries.removeLast()
        debugCheck()
        return removed
    }

    /// Empties the heap, handing its references to the caller (teardown). Membership records are
    /// left for the caller to clear.
    mutating func removeAll() -> [RunLoopTimer] {
        defer { entries.removeAll() }
        return entries.map { $0.reference.takeRetainedValue() }
    }

    /// Restores heap order after the deadline or sequence of the timer at `index` changed.
    mutating func reposition(at index: Int, deadline: UInt64) {
        entries[index].deadline = deadline
        siftDown(siftUp(index))
        debugCheck()
    }

    /// The root, `nil` when empty.
    var first: Entry? { entries.first }

    /// The latest instant the mode may sleep until without firing any timer late:
    /// the minimum of `deadline + tolerance` over timers not in their callout. `UInt64.max` if none.
    ///
    /// The walk prunes every subtree whose root deadline is already past the best bound (heap order
    /// means nothing below can do better), so with zero tolerances it looks at the root alone.
    @inline(__always)
    func wakeDeadline() -> UInt64 {
        guard let first = entries.first else { return .max }
        // The usual root (no tolerance, not in its callout) is the bound itself: no entry below it is
        // due earlier, so the walk would prune every child. Answered here, a blocking wait with timers
        // pending skips the walk's call and the retain and release of the entries it costs.
        let (inCallout, tolerance) = first.withTimer { ($0.isInCallout, $0.toleranceNanoseconds) }
        if !inCallout && tolerance == 0 { return first.deadline }
        var best = UInt64.max
        visitWake(0, &best)
        return best
    }

    private func visitWake(_ index: Int, _ best: inout UInt64) {
        let entry = entries[index]
        if entry.deadline >= best { return }
        let (inCallout, tolerance) = entry.withTimer { ($0.isInCallout, $0.toleranceNanoseconds) }
        if !inCallout {
            let (sum, overflow) = entry.deadline.addingReportingOverflow(tolerance)
            best = min(best, overflow ? .max : sum)
        }
        let first = Self.firstChild(of: index)
        guard first < entries.count else { return }
        for child in first..<min(first + 4, entries.count) { visitWake(child, &best) }
    }

    /// The timer at the root when it is the only one due at `now` and not in its callout — the usual
    /// case, which needs no batch — otherwise nil (none due, or several: use `collectDue`).
    @inline(__always)
    func soleDue(at now: UInt64) -> RunLoopTimer? {
        guard let first = entries.first, first.deadline <= now, !first.withTimer({ $0.isInCallout }) else { return nil }
        for child in 1..<min(5, entries.count) where entries[child].deadline <= now { return nil }
        return first.reference.takeUnretainedValue()
    }

    /// Appends every due timer not in its callout, in firing order (deadline, then scheduling order).
    ///
    /// Collected level by level, that is in index order (the batch itself is the queue: the children of
    /// earlier entries come before those of later ones), not depth first. A heap filled in ascending
    /// order — a burst of timers added in a loop — is then already in firing order, which the sort (a
    /// merge sort that first looks for runs) confirms in one pass; collected depth first, sorting that
    /// burst was an eighth of each timer's instructions. Due entries form a subtree at the root (a
    /// parent is never later than its child), so nothing below a pending entry is visited.
    func collectDue(at now: UInt64, into batch: inout [Entry]) {
        guard let first = entries.first, first.deadline <= now else { return }
        let start = batch.count
        batch.append(first)
        var next = start
        while next < batch.count {
            let index = batch[next].withTimer { $0.heapIndex(in: owner)! }
            next += 1
            let first = Self.firstChild(of: index)
            guard first < entries.count else { continue }
            for child in first..<min(first + 4, entries.count) where entries[child].deadline <= now {
                batch.append(entries[child])
            }
        }
        // A timer in its callout is not due again, but its subtree was searched all the same.
        var kept = start
        for index in start..<batch.count where !batch[index].withTimer({ $0.isInCallout }) {
            batch.swapAt(kept, index)
            kept += 1
        }
        batch.removeLast(batch.count - kept)
        if batch.count - start > 1 {
            batch[start...].sort { $0.precedes($1) }
        }
    }

    // MARK: heap mechanics

    /// Children of `index` are the four slots from here on.
    @inline(__always)
    private static func firstChild(of index: Int) -> Int { 4 &* index &+ 1 }
    @inline(__always)
    private static func parent(of index: Int) -> Int { (index &- 1) >> 2 }

    @inline(__always)
    private static func setIndex(_ index: Int, of entry: Entry, in owner: ObjectIdentifier) {
        entry.withTimer { $0.setHeapIndex(index, in: owner) }
    }

    /// Writes `entry` to slot `index` of a sift's buffer and records the slot in its timer.
    @inline(__always)
    private static func place(
        _ entry: Entry, at index: Int, in entries: UnsafeMutableBufferPointer<Entry>, owner: ObjectIdentifier
    ) {
        entries[index] = entry
        setIndex(index, of: entry, in: owner)
    }

    /// Returns where the entry ended up.
    ///
    /// Both sifts work on the entries' storage through one unsafe buffer: an `entries[i] = …` per level
    /// is a uniqueness check (a runtime call) and a bounds check each, most of a sift's instructions
    /// on a deep heap. Safe: the buffer lives only for the call, `entries` is not touched otherwise
    /// meanwhile, and every index is below `count` (children are checked against it, parents are
    /// smaller than their child).
    @discardableResult
    private mutating func siftUp(_ start: Int) -> Int {
        let owner = owner
        return entries.withUnsafeMutableBufferPointer { Self.siftUp(start, in: $0, owner: owner) }
    }

    private static func siftUp(_ start: Int, in entries: UnsafeMutableBufferPointer<Entry>, owner: ObjectIdentifier) -> Int {
        var child = start
        let moving = entries[child]
        while child > 0 {
            let parent = Self.parent(of: child)
            guard moving.precedes(entries[parent]) else { break }
            place(entries[parent], at: child, in: entries, owner: owner)
            child = parent
        }
        if child != start { place(moving, at: child, in: entries, owner: owner) }
        return child
    }

    /// The earliest of the (up to four) children from `first` on that lie below `count`; `first` itself
    /// must.
    @inline(__always)
    private static func earliestChild(from first: Int, below count: Int, in entries: UnsafeMutableBufferPointer<Entry>) -> Int {
        if first &+ 3 < count {
            // All four: two pairs, then their winners (three comparisons, the first two independent
            // of each other).
            let left = entries[first &+ 1].precedes(entries[first]) ? first &+ 1 : first
            let right = entries[first &+ 3].precedes(entries[first &+ 2]) ? first &+ 3 : first &+ 2
            return entries[right].precedes(entries[left]) ? right : left
        }
        var earliest = first
        var child = first &+ 1
        while child < count {
            if entries[child].precedes(entries[earliest]) { earliest = child }
            child &+= 1
        }
        return earliest
    }

    /// Refills the slot `hole` with the last entry, which the caller then drops (a bottom-up, Floyd,
    /// removal): the hole first sinks to a leaf along the earliest child, then the last entry climbs
    /// from there. The last entry comes from the bottom, so it rarely climbs far; placing it at `hole`
    /// and sifting it down would also compare it with the earliest child at every level, which is
    /// what a fired timer's removal from the root paid.
    private mutating func fillHole(_ hole: Int) {
        let owner = owner
        entries.withUnsafeMutableBufferPointer { entries in
            let count = entries.count - 1
            var parent = hole
            while true {
                let first = Self.firstChild(of: parent)
                guard first < count else { break }
                let earliest = Self.earliestChild(from: first, below: count, in: entries)
                Self.place(entries[earliest], at: parent, in: entries, owner: owner)
                parent = earliest
            }
            Self.place(entries[count], at: parent, in: entries, owner: owner)
            _ = Self.siftUp(parent, in: entries, owner: owner)
        }
    }

    private mutating func siftDown(_ start: Int) {
        let owner = owner
        entries.withUnsafeMutableBufferPointer { entries in
            var parent = start
            let count = entries.count
            let moving = entries[parent]
            while true {
                let first = Self.firstChild(of: parent)
                guard first < count else { break }
                let earliest = Self.earliestChild(from: first, below: count, in: entries)
                guard entries[earliest].precedes(moving) else { break }
                Self.place(entries[earliest], at: parent, in: entries, owner: owner)
                parent = earliest
            }
            if parent != start { Self.place(moving, at: parent, in: entries, owner: owner) }
        }
    }

    // MARK: checks

    /// Every entry is ordered after its parent, its keys are its timer's, and its timer's index record
    /// for this heap points back at it. O(n).
    func checkInvariants() -> Bool {
        for (index, entry) in entries.enumerated() {
            if index > 0, entry.precedes(entries[Self.parent(of: index)]) { return false }
            let consistent = entry.withTimer { timer in
                timer.heapIndex(in: owner) == index && timer.deadline == entry.deadline
            }
            if !consistent { return false }
        }
        return true
    }

    /// Debug builds verify small heaps after every mutation (large ones would make it quadratic).
    @inline(__always)
    private func debugCheck() {
        assert(entries.count > 256 || checkInvariants(), "RunLoopKit: timer heap inconsistent")
    }
}
