import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// DELIVER_ACKs reach the store a loop pass at a time: a room of N members acknowledges each message
/// N times, and a store that commits each call would make N transactions of it.
@Suite("Acknowledgements handed to the store a pass at a time")
struct AcknowledgementBatchTests {
    static func deliverAck(_ frames: [IMFrame]) -> IMFrame {
        var ack = IMDeliverAck()
        ack.seqs = frames.compactMap(deliveredSeq)
        return IMFrame(command: .deliverAck, serial: 0, message: ack)
    }

    @Test("the batch groups by user, in order, and only its first addition asks for a hand-over")
    func pendingAcknowledgements() {
        var pending = PendingAcknowledgements()
        let first = pending.add([3], for: "bob")
        let second = pending.add([4, 5], for: "carol")
        let third = pending.add([7], for: "bob")
        #expect(first && !second && !third, "only the first of a batch")
        #expect(pending.take() == ["bob": [3, 7], "carol": [4, 5]])
        #expect(pending.seqsByUser.isEmpty)
        let afterTaking = pending.add([8], for: "bob")
        #expect(afterTaking, "taken: the next one starts a batch")
    }

    @Test("two sessions' DELIVER_ACKs read in one pass reach the store as one batch, and move both cursors")
    func onePassOneBatch() async throws {
        try await onManualClockLoop { loop, _ in
            let store = DeferredIMStore()
            let server = IMServer(store: store)
            let alice = DeferredStoreTests.loggedIn("alice", on: server, store: store)
            let bob = DeferredStoreTests.loggedIn("bob", on: server, store: store)
            let carol = DeferredStoreTests.loggedIn("carol", on: server, store: store)
            alice.send(DeferredStoreTests.send("m1", to: "bob", serial: 2))
            alice.send(DeferredStoreTests.send("m2", to: "carol", serial: 3))
            bob.settle()
            try #require(bob.received(.deliver).count == 1 && carol.received(.deliver).count == 1)
            let batchesBefore = store.acknowledgementBatches
            bob.send(Self.deliverAck(bob.received(.deliver)), settling: false)
            carol.send(Self.deliverAck(carol.received(.deliver)), settling: false)
            bob.settle()
            #expect(store.acknowledgementBatches == batchesBefore + 1, "one hand-over for the pass")
            #expect(try store.inner.undelivered(for: "bob").isEmpty && store.inner.undelivered(for: "carol").isEmpty)
            #expect(server.storeCallsOut == 0)
        }
    }
}
