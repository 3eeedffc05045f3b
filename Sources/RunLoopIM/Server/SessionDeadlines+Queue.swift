import HeapModule
import RunLoopKit

extension SessionDeadlines {
    /// A session's deadline in the queue, naming the session by its place.
    struct Entry: Comparable {
        let at: LoopInstant
        /// Ties fire in the order they were queued. 32 bits, with the place beside it: an entry is 16
        /// bytes, not 24, and a session's slot 24, which takes the session to the next smaller heap chunk
        /// (issue 22). The count wraps after 2³² pushes; a stale entry could only be taken for its place's
        /// live one if it stayed in the queue that long, but it leaves when its instant passes (at most
        /// a login timeout or 1.5 keepalives after it was pushed), and a tie at the wrap is told in
        /// the other order.
        let order: UInt32
        let place: UInt32

        static func < (lhs: Entry, rhs: Entry) -> Bool { (lhs.at, lhs.order) < (rhs.at, rhs.order) }
        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.at == rhs.at && lhs.order == rhs.order }
    }

    /// The deadlines' entries in (instant, order) order, in two places: a FIFO lane for entries that
    /// order after the last one appended to it (sorted by construction, so O(1) in and out) and a heap
    /// for the rest. The next entry is the earlier of the lane's front and the heap's minimum.
    ///
    /// Why a lane: a heartbeat's renewal is pushed back when the session's early entry comes due, at
    /// the session's deadline — 1.5 keepalives after its last frame. A crowd of one client program
    /// announces one keepalive, so its renewals come out in the order their early entries went in and
    /// arrive at instants that do not go backwards: the lane takes them all, where the heap paid a pop
    /// and a push over its levels for each heartbeat. What does go backwards (a shorter keepalive than
    /// the lane's back, a deadline moved earlier, a heartbeat's jitter) goes to the heap, which keeps
    /// the order exact either way.
    ///
    /// RunLoopKit's `TimerLane` serves the same shape for the loop's timers but is a different
    /// structure: it removes timers from its middle (tickets, tombstones, packing, position records),
    /// where these entries are lazy and only ever leave from the front or in a rebuild.
    ///
    /// Noncopyable: it owns its ring, freed with it. Loop thread only, as its owner.
    struct Queue: ~Copyable {
        private var heap = Heap<Entry>()
        /// The lane: a ring, a power of two long (every index masked), through a pointer — an array
        /// would check bounds and uniqueness on every access. Entries are trivial values: the memory
        /// needs no initialisation, and only those from `head` on for `laneCount` are read.
        private var slots: UnsafeMutablePointer<Entry>
        private var mask: Int
        private var head = 0
        /// Entries in the lane.
        private(set) var laneCount = 0
        /// The key of the last entry appended; an entry ordered after it keeps the lane sorted. An
        /// empty lane rests at `resting`: the smallest key, which lets in any other (the heap takes
        /// that one: the order holds either way), or the largest, which lets in none (a closed lane).
        private var back: Entry
        private let resting: Entry

        private static let smallestRing = 16

        /// `usesLane` false (only in tests, which compare the order with the heap alone) closes the lane.
        init(usesLane: Bool = true) {
            slots = .allocate(capacity: Self.smallestRing)
            mask = Self.smallestRing - 1
            resting =
                usesLane
                ? Entry(at: LoopInstant(nanoseconds: 0), order: 0, place: 0)
                : Entry(at: .distantFuture, order: .max, place: 0)
            back = resting
        }

        deinit { slots.deallocate() }

        /// Entries, live or stale.
        var count: Int { heap.count + laneCount }
        /// Entries the heap and the ring have room for.
        var capacity: Int { heap.unordered.capacity + mask + 1 }

        /// The earliest entry.
        var first: Entry? {
            guard laneCount > 0 else { return heap.min }
            let front = slots[head]
            guard let root = heap.min, root < front else { return front }
            return root
        }

        mutating func insert(_ entry: Entry) {
            guard back < entry else {
                heap.insert(entry)
                return
            }
            if laneCount > mask { grow() }
            slots[(head &+ laneCount) & mask] = entry
            laneCount &+= 1
            back = entry
        }

        /// Takes the earliest entry out if it is due at `now`; `nil` if none is.
        mutating func removeFirst(dueBy now: LoopInstant) -> Entry? {
            if laneCount > 0 {
                let front = slots[head]
                if heap.min.map({ !($0 < front) }) ?? true {
                    guard front.at <= now else { return nil }
                    laneCount &-= 1
                    head = laneCount == 0 ? 0 : (head &+ 1) & mask
                    if laneCount == 0 { back = resting }
                    return front
                }
            }
            guard let root = heap.min, root.at <= now else { return nil }
            heap.removeMin()
            return root
        }

        /// Calls `body` with every entry, in no particular order.
        func forEach(_ body: (Entry) -> Void) {
            for entry in heap.unordered { body(entry) }
            for offset in 0..<laneCount { body(slots[(head &+ offset) & mask]) }
        }

        /// Keeps the entries `isKept` answers true for, in room for them alone.
        mutating func keep(where isKept: (Entry) -> Bool) {
            let keptInHeap = heap.unordered.filter(isKept)
            var smaller = Heap<Entry>(minimumCapacity: keptInHeap.count)
            for entry in keptInHeap { smaller.insert(entry) }
            heap = smaller

            var kept: [Entry] = []
            kept.reserveCapacity(laneCount)
            for offset in 0..<laneCount {
                let entry = slots[(head &+ offset) & mask]
                if isKept(entry) { kept.append(entry) }
            }
            var ring = Self.smallestRing
            while ring < kept.count { ring &*= 2 }
            slots.deallocate()
            slots = .allocate(capacity: ring)
            mask = ring - 1
            head = 0
            laneCount = kept.count
            for (index, entry) in kept.enumerated() { slots[index] = entry }
            // The last kept entry still bounds the lane (only keys left); an empty lane rests again.
            back = kept.last ?? resting
        }

        /// Doubles the ring, the lane's entries at its start.
        private mutating func grow() {
            let ring = (mask + 1) * 2
            let larger = UnsafeMutablePointer<Entry>.allocate(capacity: ring)
            for offset in 0..<laneCount { larger[offset] = slots[(head &+ offset) & mask] }
            slots.deallocate()
            slots = larger
            mask = ring - 1
            head = 0
        }
    }
}
