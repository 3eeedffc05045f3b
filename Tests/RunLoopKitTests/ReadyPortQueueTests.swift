import Glibc
import Testing

@testable import RunLoopKit

/// A mode's queue of ready port registrations on its own: queue order through append, take and
/// prepend, the lone-entry take, and the one retain each queued registration holds.
@Suite struct ReadyPortQueueTests {
    private func registrations(_ count: Int, in store: ModeStore, fd: Int32) throws -> [PortRegistration] {
        try (0..<count).map { index in
            PortRegistration(source: try RunLoopPortSource(fileDescriptor: fd) { _, _ in }, store: store, sequence: UInt64(index))
        }
    }

    @Test func keepsQueueOrderThroughAppendTakeAndPrepend() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        let store = try ModeStore(mode: "queue", wakePort: WakeUpPort(), loopID: ObjectIdentifier(Self.self))
        let all = try registrations(6, in: store, fd: ends[0])
        var queue = ReadyPortQueue()
        #expect(queue.isEmpty && queue.takeSole() == nil)

        queue.append(all[0])
        #expect(queue.takeSole() === all[0])
        #expect(queue.isEmpty)

        for registration in all[1...3] { queue.append(registration) }
        #expect(queue.takeSole() == nil, "three queued: none is taken alone")
        var taken: [PortRegistration] = []
        queue.takeAll(into: &taken)
        #expect(taken.map(\.sequence) == [1, 2, 3] && queue.isEmpty)
        #expect(taken.allSatisfy { $0.nextReady == nil })

        // Put back ahead of one queued since, then append behind: the order is kept at both ends.
        queue.append(all[4])
        queue.prepend(taken[1...])
        queue.append(all[5])
        var again: [PortRegistration] = []
        queue.takeAll(into: &again)
        #expect(again.map(\.sequence) == [2, 3, 4, 5])

        // Put back into an empty queue: its tail is the last one put back.
        queue.prepend(again[2...])
        queue.append(all[0])
        var last: [PortRegistration] = []
        queue.takeAll(into: &last)
        #expect(last.map(\.sequence) == [4, 5, 0])
        queue.prepend(last[3...])
        #expect(queue.isEmpty, "prepending nothing leaves the queue empty")
    }

    @Test func takesInDispatchOrderWhateverTheQueueOrder() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        let store = try ModeStore(mode: "queue", wakePort: WakeUpPort(), loopID: ObjectIdentifier(Self.self))
        // Sequence i has order orders[i]; queued in a scrambled order, taken by (order, sequence).
        let orders = (0..<200).map { [0, 3, -2, 0, 1, Int.max, Int.min][$0 % 7] }
        let all = try orders.enumerated().map { index, order in
            PortRegistration(
                source: try RunLoopPortSource(fileDescriptor: ends[0], order: order) { _, _ in }, store: store,
                sequence: UInt64(index))
        }
        let expected = all.indices.sorted { orders[$0] < orders[$1] || (orders[$0] == orders[$1] && $0 < $1) }
        var queue = ReadyPortQueue()
        for index in (0..<200).map({ ($0 * 77) % 200 }) { queue.append(all[index]) }
        var taken: [PortRegistration] = [all[0]]
        queue.takeAllInOrder(into: &taken)
        #expect(taken.count == 201 && taken[0] === all[0], "appended behind what the array held")
        #expect(taken.dropFirst().map { Int($0.sequence) } == expected)
        #expect(queue.isEmpty && taken.allSatisfy { $0.nextReady == nil })

        // Queued in dispatch order already (no sort): taken as queued; then one out of place.
        for index in expected { queue.append(all[index]) }
        var inOrder: [PortRegistration] = []
        queue.takeAllInOrder(into: &inOrder)
        #expect(inOrder.map { Int($0.sequence) } == expected)
        for index in expected.dropFirst() { queue.append(all[index]) }
        queue.append(all[expected[0]])
        var lastFirst: [PortRegistration] = []
        queue.takeAllInOrder(into: &lastFirst)
        #expect(lastFirst.map { Int($0.sequence) } == expected)

        // Equal orders: by sequence, however queued.
        for index in [12, 5, 19, 0] { queue.append(all[index * 7]) }
        var ties: [PortRegistration] = []
        queue.takeAllInOrder(into: &ties)
        #expect(ties.map(\.sequence) == [0, 35, 84, 133])
    }

    @Test func takingInOrderHandsEachRetainToTheArray() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        let store = try ModeStore(mode: "queue", wakePort: WakeUpPort(), loopID: ObjectIdentifier(Self.self))
        var queue = ReadyPortQueue()
        var watched: [Weak] = []
        do {
            let made = try registrations(3, in: store, fd: ends[0])
            watched = made.map(Weak.init)
            for registration in made.reversed() { queue.append(registration) }
        }
        #expect(watched.allSatisfy { $0.registration != nil }, "the queue keeps them")
        do {
            var taken: [PortRegistration] = []
            queue.takeAllInOrder(into: &taken)
            #expect(taken.map(\.sequence) == [0, 1, 2])
        }
        #expect(watched.allSatisfy { $0.registration == nil }, "the array held the only retain")
    }

    private struct Weak {
        weak var registration: PortRegistration?
        init(_ registration: PortRegistration) { self.registration = registration }
    }

    @Test func holdsOneRetainPerQueuedRegistrationUntilTaken() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        let store = try ModeStore(mode: "queue", wakePort: WakeUpPort(), loopID: ObjectIdentifier(Self.self))
        var queue = ReadyPortQueue()
        weak var sole: PortRegistration?
        weak var first: PortRegistration?
        weak var second: PortRegistration?
        do {
            let made = try registrations(3, in: store, fd: ends[0])
            sole = made[0]
            queue.append(made[0])
        }
        #expect(sole != nil, "the queue keeps a registration its table let go")
        do {
            let taken = queue.takeSole()
            #expect(taken === sole)
        }
        #expect(sole == nil, "taking hands the queue's retain to the caller")
        do {
            let made = try registrations(2, in: store, fd: ends[0])
            first = made[0]
            second = made[1]
            queue.append(made[0])
            queue.append(made[1])
        }
        #expect(first != nil && second != nil)
        queue.removeAll()
        #expect(first == nil && second == nil && queue.isEmpty)
    }
}
