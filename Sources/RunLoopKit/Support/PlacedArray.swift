/// Where the objects of one ``PlacedArray`` keep their index in it, so that removing one needs no
/// search and no hash table. A type of its own (not a conformance of the objects' class), so that a
/// public class keeps the field internal.
package protocol PlaceKeeper {
    associatedtype Element: AnyObject
    /// `element`'s index in the array that holds it, or ``PlacedArray/notPlaced``.
    static func place(of element: Element) -> UInt32
    /// Only the array calls it.
    static func setPlace(_ place: UInt32, of element: Element)
}

/// Objects kept in an array in which each knows its place: one leaving hands its place to the last.
///
/// What a table of open connections or sessions needs (insert, remove, list) at the cost of the array
/// slot alone: keyed by object in a dictionary, each entry cost its 16-byte bucket at a load of a half to
/// three quarters (21–33 bytes); here 8 bytes at the array's growth (8–16), and the place is 4 bytes the
/// owner can fit in its padding. Order is not kept.
///
/// Not thread-safe: used by its owner's thread only.
package struct PlacedArray<Keeper: PlaceKeeper> {
    package typealias Element = Keeper.Element

    /// The place of an object in no array.
    package static var notPlaced: UInt32 { .max }

    /// The objects, in no particular order.
    package private(set) var all: [Element] = []

    package init() {}

    package var count: Int { all.count }
    package var isEmpty: Bool { all.isEmpty }
    /// Room in the array (for tests).
    package var capacity: Int { all.capacity }

    /// Adds `element`, which must not be in an array already.
    package mutating func insert(_ element: Element) {
        precondition(Keeper.place(of: element) == Self.notPlaced, "an object is placed in one array at a time")
        Keeper.setPlace(UInt32(all.count), of: element)
        all.append(element)
    }

    /// Takes `element` out, if it is in this array: the last one moves into its place.
    package mutating func remove(_ element: Element) {
        let place = Int(Keeper.place(of: element))
        guard place < all.count, all[place] === element else { return }
        Keeper.setPlace(Self.notPlaced, of: element)
        let last = all.removeLast()
        if last !== element {
            all[place] = last
            Keeper.setPlace(UInt32(place), of: last)
        }
        shrinkIfSparse()
    }

    /// Whether `element` is in this array.
    package func contains(_ element: Element) -> Bool {
        let place = Int(Keeper.place(of: element))
        return place < all.count && all[place] === element
    }

    /// Gives back the room a crowd left once those still in fill at most a quarter of it, as the hash
    /// tables do (HashTable+Shrinking): O(1) per removal, spread out.
    private mutating func shrinkIfSparse() {
        guard all.capacity > 64, all.count * 4 < all.capacity else { return }
        var smaller: [Element] = []
        smaller.reserveCapacity(all.count)
        smaller.append(contentsOf: all)
        all = smaller
    }
}
