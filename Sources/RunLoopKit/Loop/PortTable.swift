/// A mode's port registrations, hashed by descriptor number and chained through the registrations
/// themselves (`nextInBucket`).
///
/// One table answers the mode's three questions — is this source here, who else watches this
/// descriptor (stale sources), and what does the mode hold (counts, teardown) — for one pointer per
/// registration and one per bucket. The two dictionaries it replaces (by source, and by descriptor
/// to arrays) cost about 100 bytes per source at their load factors, more than the registration.
///
/// Chains are short: descriptors are dense small numbers and the table keeps at most one registration
/// per bucket on average. Guarded by the loop lock, like the rest of the store.
struct PortTable {
    private var buckets: [PortRegistration?] = []
    /// log2 of `buckets.count` (0 while empty).
    private var shift: UInt32 = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Fibonacci hashing of the descriptor: pipes and sockets opened in pairs leave every other number
    /// unwatched, which a plain mask would turn into chains of two.
    @inline(__always)
    private func bucket(of fd: Int32) -> Int {
        Int((UInt32(bitPattern: fd) &* 0x9E37_79B1) >> (32 - shift))
    }

    /// The first registration of the chain holding `fd`'s registrations (which may hold other
    /// descriptors too: compare `source.fileDescriptor`).
    @inline(__always)
    func chain(for fd: Int32) -> PortRegistration? {
        count == 0 ? nil : buckets[bucket(of: fd)]
    }

    func registration(for source: RunLoopPortSource) -> PortRegistration? {
        var current = chain(for: source.fileDescriptor)
        while let registration = current {
            if registration.source === source { return registration }
            current = registration.nextInBucket
        }
        return nil
    }

    /// Appends at the end of its chain, so a descriptor's registrations stay in the order they came.
    mutating func insert(_ registration: PortRegistration) {
        assert(registration.nextInBucket == nil, "RunLoopKit: a port registration is in two tables")
        if count >= buckets.count { grow() }
        count += 1
        link(registration)
    }

    /// Returns false if `registration` is not in the table.
    @discardableResult
    mutating func remove(_ registration: PortRegistration) -> Bool {
        guard count > 0 else { return false }
        let index = bucket(of: registration.source.fileDescriptor)
        guard let head = buckets[index] else { return false }
        if head === registration {
            buckets[index] = registration.nextInBucket
        } else {
            var previous = head
            while let next = previous.nextInBucket, next !== registration { previous = next }
            guard previous.nextInBucket === registration else { return false }
            previous.nextInBucket = registration.nextInBucket
        }
        registration.nextInBucket = nil
        count -= 1
        // A crowd's descriptors gone (19,000 connections closed): its buckets go too, once the
        // registrations left fill at most a quarter of them — O(1) per removal, spread out.
        if buckets.count > 64 && count * 4 < buckets.count { rehash(shift: Swift.max(3, shift - 2)) }
        return true
    }

    /// Buckets of the table (for the test that a crowd's room goes back).
    var bucketCount: Int { buckets.count }

    mutating func removeAll() {
        // Unlinked one by one: releasing a long chain (many sources on one descriptor) through its head
        // would recurse once per registration.
        for registration in self { registration.nextInBucket = nil }
        buckets = []
        shift = 0
        count = 0
    }

    private mutating func grow() { rehash(shift: Swift.max(shift + 1, 3)) }

    /// Moves every registration into `1 << shift` buckets, each chain keeping its order.
    private mutating func rehash(shift newShift: UInt32) {
        let old = buckets
        shift = newShift
        buckets = Array(repeating: nil, count: 1 << shift)
        for head in old {
            var current = head
            while let registration = current {
                current = registration.nextInBucket
                registration.nextInBucket = nil
                link(registration)
            }
        }
    }

    private mutating func link(_ registration: PortRegistration) {
        let index = bucket(of: registration.source.fileDescriptor)
        guard var last = buckets[index] else {
            buckets[index] = registration
            return
        }
        while let next = last.nextInBucket { last = next }
        last.nextInBucket = registration
    }
}

extension PortTable: Sequence {
    /// Reads a registration's successor before handing it out, so the loop body may unlink it (by
    /// hand, as `removeAll` does: `remove` may rebuild the buckets under a running iteration).
    struct Iterator: IteratorProtocol {
        fileprivate let buckets: [PortRegistration?]
        fileprivate var index = 0
        fileprivate var upcoming: PortRegistration?

        mutating func next() -> PortRegistration? {
            while upcoming == nil {
                guard index < buckets.count else { return nil }
                upcoming = buckets[index]
                index += 1
            }
            let registration = upcoming!
            upcoming = registration.nextInBucket
            return registration
        }
    }

    func makeIterator() -> Iterator { Iterator(buckets: buckets) }
    var underestimatedCount: Int { count }
}
