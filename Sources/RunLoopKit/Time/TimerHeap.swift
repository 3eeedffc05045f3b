/// One mode's timers, as a binary min-heap ordered by (deadline, sequence). Each timer records its
/// index in every heap it belongs to, so removal and re-dating cost O(log n).
///
/// Entries carry their ordering keys inline, so sifting compares plain integers and never touches the
/// timer objects (each touch of a class property costs reference counting and an exclusivity check);
/// ``reposition(_:)`` refreshes an entry's keys from its timer.
///
/// Guarded by the owning loop's lock.
struct TimerHeap {
    struct Entry {
        var deadline: UInt64
        var sequence: UInt64
        let timer: RunLoopTimer

        init(_ timer: RunLoopTimer) {
            deadline = timer.deadline
            sequence = timer.sequence
            self.timer = timer
        }

        @inline(__always)
        func precedes(_ other: Entry) -> Bool {
            deadline < other.deadline || (deadline == other.deadline && sequence < other.sequence)
        }
    }

    private var entries: [Entry] = []
    /// The mode store this heap belongs to: a timer's membership records are found by it.
    var owner: ObjectIdentifier?

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    var earliest: RunLoopTimer? { entries.first?.timer }
    /// Every timer, in heap order (for teardown).
    var timers: [RunLoopTimer] { entries.map(\.timer) }

    func contains(_ timer: RunLoopTimer) -> Bool { slot(of: timer) != nil }

    mutating func insert(_ timer: RunLoopTimer, store: ModeStore) {
        timer.memberships.append(TimerMembership(store: store, heapIndex: entries.count))
        entries.append(Entry(timer))
        siftUp(entries.count - 1)
    }

    /// Removes the timer and its membership record.
    mutating func remove(_ timer: RunLoopTimer) {
        guard let slot = slot(of: timer) else { return }
        let index = timer.memberships[slot].heapIndex
        timer.memberships.remove(at: slot)
        let last = entries.count - 1
        if index != last {
            entries.swapAt(index, last)
            setIndex(index, of: entries[index].timer)
        }
        entries.removeLast()
        if index < entries.count {
            siftDown(siftUp(index))
        }
    }

    /// Restores heap order after the timer's deadline or sequence changed.
    mutating func reposition(_ timer: RunLoopTimer) {
        guard let slot = slot(of: timer) else { return }
        let index = timer.memberships[slot].heapIndex
        entries[index].deadline = timer.deadline
        entries[index].sequence = timer.sequence
        siftDown(siftUp(index))
    }

    /// The latest instant the mode may sleep until without firing any timer late:
    /// the minimum of `deadline + tolerance` over timers not in their callout. `UInt64.max` if none.
    ///
    /// The walk prunes every subtree whose root deadline is already past the best bound (heap order
    /// means nothing below can do better), so with zero tolerances it looks at the root alone.
    func wakeDeadline() -> UInt64 {
        var best = UInt64.max
        if !entries.isEmpty { visitWake(0, &best) }
        return best
    }

    private func visitWake(_ index: Int, _ best: inout UInt64) {
        let entry = entries[index]
        if entry.deadline >= best { return }
        if !entry.timer.isInCallout {
            let (sum, overflow) = entry.deadline.addingReportingOverflow(entry.timer.toleranceNanoseconds)
            best = min(best, overflow ? .max : sum)
        }
        let left = 2 * index + 1
        if left < entries.count { visitWake(left, &best) }
        if left + 1 < entries.count { visitWake(left + 1, &best) }
    }

    /// Whether any timer not in its callout is due at `now`.
    func hasDue(at now: UInt64) -> Bool {
        guard let first = entries.first, first.deadline <= now else { return false }
        return firstDue(0, now)
    }

    private func firstDue(_ index: Int, _ now: UInt64) -> Bool {
        let entry = entries[index]
        if entry.deadline > now { return false }
        if !entry.timer.isInCallout { return true }
        let left = 2 * index + 1
        return (left < entries.count && firstDue(left, now)) || (left + 1 < entries.count && firstDue(left + 1, now))
    }

    /// Appends every due timer not in its callout, in firing order (deadline, then scheduling order).
    func collectDue(at now: UInt64, into batch: inout [Entry]) {
        let start = batch.count
        if !entries.isEmpty { visitDue(0, now, &batch) }
        if batch.count - start > 1 {
            batch[start...].sort { $0.precedes($1) }
        }
    }

    private func visitDue(_ index: Int, _ now: UInt64, _ batch: inout [Entry]) {
        let entry = entries[index]
        if entry.deadline > now { return }
        if !entry.timer.isInCallout { batch.append(entry) }
        let left = 2 * index + 1
        if left < entries.count { visitDue(left, now, &batch) }
        if left + 1 < entries.count { visitDue(left + 1, now, &batch) }
    }

    // MARK: heap mechanics

    @inline(__always)
    private func slot(of timer: RunLoopTimer) -> Int? {
        // Nearly every timer is in one mode: check the first membership before searching.
        if let first = timer.memberships.first, first.storeID == owner { return 0 }
        return timer.memberships.firstIndex { $0.storeID == owner }
    }

    @inline(__always)
    private func setIndex(_ index: Int, of timer: RunLoopTimer) {
        if let slot = slot(of: timer) { timer.memberships[slot].heapIndex = index }
    }

    /// Returns where the entry ended up.
    @discardableResult
    private mutating func siftUp(_ start: Int) -> Int {
        var child = start
        let moving = entries[child]
        while child > 0 {
            let parent = (child - 1) / 2
            guard moving.precedes(entries[parent]) else { break }
            entries[child] = entries[parent]
            setIndex(child, of: entries[child].timer)
            child = parent
        }
        if child != start {
            entries[child] = moving
            setIndex(child, of: moving.timer)
        }
        return child
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = entries.count
        let moving = entries[parent]
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            var smallest = left
            if left + 1 < count, entries[left + 1].precedes(entries[left]) { smallest = left + 1 }
            guard entries[smallest].precedes(moving) else { break }
            entries[parent] = entries[smallest]
            setIndex(parent, of: entries[parent].timer)
            parent = smallest
        }
        if parent != start {
            entries[parent] = moving
            setIndex(parent, of: moving.timer)
        }
    }
}
