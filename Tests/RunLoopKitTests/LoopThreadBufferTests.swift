import RunLoopKit
import Synchronization
import Testing

@Suite struct LoopThreadBufferTests {
    /// Counts its instances alive, so a test sees every element released exactly once.
    private final class Tracked {
        static let alive = Atomic<Int>(0)
        let value: Int

        init(_ value: Int) {
            self.value = value
            Self.alive.add(1, ordering: .relaxed)
        }

        deinit { Self.alive.subtract(1, ordering: .relaxed) }
    }

    @Test func keepsEveryElementInOrderAcrossGrowth() {
        let buffer = LoopThreadBuffer<Int>()
        let count = LoopThreadBuffer<Int>.initialCapacity * 5 + 3
        for value in 0..<count { buffer.append(value) }
        #expect(buffer.count == count)
        #expect(Array(buffer.elements) == Array(0..<count))
        #expect(buffer.capacity >= count)
    }

    @Test func emptyingKeepsTheRoomUpToItsLimitOnly() {
        let buffer = LoopThreadBuffer<Int>()
        for value in 0..<100 { buffer.append(value) }
        let grown = buffer.capacity
        buffer.removeAll(keepingCapacityUpTo: grown)
        #expect(buffer.isEmpty && buffer.capacity == grown)
        for value in 0..<100 { buffer.append(value) }
        buffer.removeAll(keepingCapacityUpTo: 50)
        #expect(buffer.isEmpty)
        #expect(buffer.capacity == LoopThreadBuffer<Int>.initialCapacity)
        buffer.append(7)
        #expect(Array(buffer.elements) == [7])
    }

    /// The buffer holds what it keeps (a stall's callouts retain their labels) and lets go of it when
    /// emptied and when it goes.
    @Test func releasesItsElementsWhenEmptiedAndWhenFreed() {
        do {
            let buffer = LoopThreadBuffer<Tracked>()
            for value in 0..<40 { buffer.append(Tracked(value)) }
            #expect(Tracked.alive.load(ordering: .relaxed) == 40)
            #expect(buffer.elements.map(\.value) == Array(0..<40))
            buffer.removeAll(keepingCapacityUpTo: 1_024)
            #expect(Tracked.alive.load(ordering: .relaxed) == 0)
            for value in 0..<3 { buffer.append(Tracked(value)) }
            #expect(Tracked.alive.load(ordering: .relaxed) == 3)
        }
        #expect(Tracked.alive.load(ordering: .relaxed) == 0)
    }
}
