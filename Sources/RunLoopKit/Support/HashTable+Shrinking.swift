/// A hash table that can be rebuilt smaller: Swift's dictionaries and sets never shrink by
/// themselves, so a table that held a crowd (19,000 users online, then gone) would keep its size for
/// good.
package protocol ShrinkableHashTable: Collection {
    var capacity: Int { get }
    init(minimumCapacity: Int)
    /// Puts an element of another table of the same kind into this one.
    mutating func insertMoved(_ element: Element)
}

extension ShrinkableHashTable {
    /// Gives back the room of removed entries once those left fill at most a quarter of it. A
    /// rebuild happens only after three quarters of the entries went since the last one, so it costs
    /// O(1) per removal, spread out.
    package mutating func shrinkIfSparse() {
        guard capacity > 64, count * 4 < capacity else { return }
        var smaller = Self(minimumCapacity: count)
        for element in self { smaller.insertMoved(element) }
        self = smaller
    }
}

extension Dictionary: ShrinkableHashTable {
    package mutating func insertMoved(_ element: Element) { self[element.key] = element.value }
}

extension Set: ShrinkableHashTable {
    package mutating func insertMoved(_ element: Element) { insert(element) }
}
