/// A growable list that one thread appends to and empties in place, for bookkeeping that runs on
/// every loop callout: an append is a store and a count, with none of an `Array` property's costs
/// (a uniqueness check of its storage, and a runtime exclusivity check of the property per access —
/// four of them made the stall detector's record of a callout ~800 instructions, issue 22).
///
/// Not thread-safe: one thread uses it (the loop's). `elements` is valid until the next change.
package final class LoopThreadBuffer<Element> {
    /// The room a fresh or emptied-past-its-limit buffer starts with.
    package static var initialCapacity: Int { 16 }

    @exclusivity(unchecked) private var base: UnsafeMutablePointer<Element>
    @exclusivity(unchecked) package private(set) var count = 0
    @exclusivity(unchecked) package private(set) var capacity: Int

    package init() {
        capacity = Self.initialCapacity
        base = .allocate(capacity: Self.initialCapacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    package var isEmpty: Bool { count == 0 }

    /// What the buffer holds, oldest first; valid until the buffer next changes.
    package var elements: UnsafeBufferPointer<Element> { UnsafeBufferPointer(start: base, count: count) }

    @inline(__always)
    package func append(_ element: Element) {
        if count == capacity { grow() }
        (base + count).initialize(to: element)
        count += 1
    }

    /// Empties the buffer. A buffer that grew past `limit` (a wide pass, a busy second) gives its
    /// room back rather than holding it for as long as the loop runs.
    package func removeAll(keepingCapacityUpTo limit: Int) {
        base.deinitialize(count: count)
        count = 0
        guard capacity > limit else { return }
        base.deallocate()
        capacity = Self.initialCapacity
        base = .allocate(capacity: capacity)
    }

    private func grow() {
        let larger = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
        larger.moveInitialize(from: base, count: count)
        base.deallocate()
        base = larger
        capacity *= 2
    }
}
