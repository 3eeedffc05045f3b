/// One mode's timers, as a binary min-heap ordered by (deadline, sequence). Each timer records its
/// index in every heap it belongs to, so removal and re-dating cost O(log n).
///
/// Guarded by the owning loop's lock.
struct TimerHeap {
    private(set) var timers: [RunLoopTimer] = []
    private let owner: ObjectIdentifier

    init(owner: ModeStore) { self.owner = ObjectIdentifier(owner) }

    var isEmpty: Bool { timers.isEmpty }
    var count: Int { timers.count }
    var earliest: RunLoopTimer? { timers.first }

    func contains(_ timer: RunLoopTimer) -> Bool { slot(of: timer) != nil }

    mutating func insert(_ timer: RunLoopTimer, store: ModeStore) {
        timer.memberships.append(TimerMembership(store: store, heapIndex: timers.count))
        timers.append(timer)
        siftUp(timers.count - 1)
    }

    /// Removes the timer and its membership record.
    mutating func remove(_ timer: RunLoopTimer) {
        guard let slot = slot(of: timer) else { return }
        let index = timer.memberships[slot].heapIndex
        timer.memberships.remove(at: slot)
        let last = timers.count - 1
        if index != last {
            timers.swapAt(index, last)
            setIndex(index, of: timers[index])
        }
        timers.removeLast()
        if index < timers.count {
            siftDown(index)
            siftUp(index)
        }
    }

    /// Restores heap order after the timer's deadline or sequence changed.
    mutating func reposition(_ timer: RunLoopTimer) {
        guard let slot = slot(of: timer) else { return }
        let index = timer.memberships[slot].heapIndex
        siftUp(index)
        siftDown(timer.memberships[self.slot(of: timer)!].heapIndex)
    }

    /// The latest instant the mode may sleep until without firing any timer late:
    /// the minimum of `deadline + tolerance` over timers not in their callout. `UInt64.max` if none.
    ///
    /// The walk prunes every subtree whose root deadline is already past the best bound (heap order
    /// means nothing below can do better), so with zero tolerances it looks at the root alone.
    func wakeDeadline() -> UInt64 {
        var best = UInt64.max
        if !timers.isEmpty { visitWake(0, &best) }
        return best
    }

    private func visitWake(_ index: Int, _ best: inout UInt64) {
        let timer = timers[index]
        if timer.deadline >= best { return }
        if !timer.isInCallout {
            let (sum, overflow) = timer.deadline.addingReportingOverflow(timer.toleranceNanoseconds)
            best = min(best, overflow ? .max : sum)
        }
        let left = 2 * index + 1
        if left < timers.count { visitWake(left, &best) }
        if left + 1 < timers.count { visitWake(left + 1, &best) }
    }

    /// Whether any timer not in its callout is due at `now`.
    func hasDue(at now: UInt64) -> Bool {
        guard let first = timers.first, first.deadline <= now else { return false }
        return firstDue(0, now)
    }

    private func firstDue(_ index: Int, _ now: UInt64) -> Bool {
        let timer = timers[index]
        if timer.deadline > now { return false }
        if !timer.isInCallout { return true }
        let left = 2 * index + 1
        return (left < timers.count && firstDue(left, now)) || (left + 1 < timers.count && firstDue(left + 1, now))
    }

    /// Appends every due timer not in its callout, in firing order (deadline, then scheduling order).
    func collectDue(at now: UInt64, into batch: inout [RunLoopTimer]) {
        let start = batch.count
        if !timers.isEmpty { visitDue(0, now, &batch) }
        if batch.count - start > 1 {
            batch[start...].sort(by: RunLoopTimer.precedes)
        }
    }

    private func visitDue(_ index: Int, _ now: UInt64, _ batch: inout [RunLoopTimer]) {
        let timer = timers[index]
        if timer.deadline > now { return }
        if !timer.isInCallout { batch.append(timer) }
        let left = 2 * index + 1
        if left < timers.count { visitDue(left, now, &batch) }
        if left + 1 < timers.count { visitDue(left + 1, now, &batch) }
    }

    // MARK: heap mechanics

    @inline(__always)
    private func slot(of timer: RunLoopTimer) -> Int? {
        timer.memberships.firstIndex { ObjectIdentifier($0.store) == owner }
    }

    @inline(__always)
    private func setIndex(_ index: Int, of timer: RunLoopTimer) {
        if let slot = slot(of: timer) { timer.memberships[slot].heapIndex = index }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard RunLoopTimer.precedes(timers[child], timers[parent]) else { break }
            timers.swapAt(child, parent)
            setIndex(child, of: timers[child])
            setIndex(parent, of: timers[parent])
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = timers.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            var smallest = left
            if left + 1 < count, RunLoopTimer.precedes(timers[left + 1], timers[left]) { smallest = left + 1 }
            guard RunLoopTimer.precedes(timers[smallest], timers[parent]) else { break }
            timers.swapAt(smallest, parent)
            setIndex(smallest, of: timers[smallest])
            setIndex(parent, of: timers[parent])
            parent = smallest
        }
    }
}
