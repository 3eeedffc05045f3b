import Testing

@testable import RunLoopKit

/// `PlacedArray`: the table of open connections and sessions (issue 22), each object knowing its index.
@Suite("Placed array")
struct PlacedArrayTests {
    final class Item {
        var place = PlacedArray<ItemPlace>.notPlaced
    }

    enum ItemPlace: PlaceKeeper {
        static func place(of item: Item) -> UInt32 { item.place }
        static func setPlace(_ place: UInt32, of item: Item) { item.place = place }
    }

    private func placesAreIndices(_ array: PlacedArray<ItemPlace>) -> Bool {
        array.all.indices.allSatisfy { array.all[$0].place == UInt32($0) }
    }

    @Test("a removed object hands its place to the last; removing one not in changes nothing")
    func removalMovesTheLast() {
        var array = PlacedArray<ItemPlace>()
        let items = (0..<4).map { _ in Item() }
        for item in items { array.insert(item) }
        #expect(array.count == 4 && placesAreIndices(array))
        array.remove(items[1])
        #expect(items[1].place == PlacedArray<ItemPlace>.notPlaced && !array.contains(items[1]))
        #expect(array.all.map(ObjectIdentifier.init) == [items[0], items[3], items[2]].map(ObjectIdentifier.init))
        #expect(placesAreIndices(array))
        array.remove(items[1])
        #expect(array.count == 3)
        // An object of another array whose place happens to be a valid index here is not taken out.
        var other = PlacedArray<ItemPlace>()
        let stranger = Item()
        other.insert(stranger)
        array.remove(stranger)
        #expect(array.count == 3 && other.contains(stranger) && placesAreIndices(array))
        array.remove(items[2])
        #expect(array.all.map(ObjectIdentifier.init) == [items[0], items[3]].map(ObjectIdentifier.init) && placesAreIndices(array))
    }

    @Test("the room a crowd left goes back once a quarter or less of it is used")
    func roomGoesBackAfterACrowd() {
        var array = PlacedArray<ItemPlace>()
        let crowd = (0..<4_096).map { _ in Item() }
        for item in crowd { array.insert(item) }
        let full = array.capacity
        for item in crowd.dropFirst(10) { array.remove(item) }
        #expect(array.count == 10 && array.capacity < full / 4 && placesAreIndices(array))
    }
}
