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
