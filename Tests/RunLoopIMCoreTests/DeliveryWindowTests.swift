import Testing

@testable import RunLoopIMCore

/// The session's delivery window as a value; FlowControlTests (RunLoopIMTests) drive it through a server.
@Suite("Delivery window")
struct DeliveryWindowTests {
    @Test("window bookkeeping: count and bytes bound it, one oversized message still goes alone, live messages wait while behind")
    func windowRules() {
        var window = DeliveryWindow(maximumMessages: 2, maximumBytes: 100)
        #expect(window.isBehind)
        let offeredWhileBehind = window.offerLive(seq: 1, bytes: 1)
        #expect(!offeredWhileBehind, "behind: live messages come from the store, in order")
        window.readStarted()
        window.readFinished(asked: 2, got: 0)
        #expect(!window.isBehind)
        #expect(window.admits(bytes: 500), "an empty window admits even a message larger than itself")
        window.sent(seq: 1, bytes: 500)
        #expect(!window.admits(bytes: 1))
        let offeredWhileFull = window.offerLive(seq: 2, bytes: 1)
        #expect(!offeredWhileFull && window.isBehind, "full: the session falls behind")
        let refillDue = window.acknowledged([1])
        #expect(refillDue, "an ack frees room while behind: a refill is due")
        window.sent(seq: 2, bytes: 60)
        #expect(!window.admits(bytes: 50) && window.admits(bytes: 40))
        window.sent(seq: 3, bytes: 40)
        #expect(window.freeMessages == 0 && window.cursor == 3)
        let foreignAck = window.acknowledged([99])
        #expect(!foreignAck, "a foreign seq frees nothing")
    }

    @Test("one read at a time; a live message refused while a read is out keeps the session behind however short the answer")
    func liveOfferDuringRead() {
        var window = DeliveryWindow(maximumMessages: 4, maximumBytes: 100)
        #expect(window.isRefillDue)
        window.readStarted()
        #expect(!window.isRefillDue, "no second read while one is out")
        let offered = window.offerLive(seq: 10, bytes: 1)
        #expect(!offered, "behind while reading: the message waits in the store")
        window.readFinished(asked: 4, got: 0)
        #expect(window.isBehind && window.isRefillDue, "the read's snapshot may predate the refused message: read again")
        window.readStarted()
        window.readFinished(asked: 4, got: 1)
        #expect(!window.isBehind, "a short answer with no offer meanwhile: caught up")
        let live = window.offerLive(seq: 11, bytes: 1)
        #expect(live)
        window.sent(seq: 11, bytes: 1)
        let again = window.offerLive(seq: 11, bytes: 1)
        #expect(!again && !window.isBehind, "sent on this session already (a resend's second answer): not again, and not behind")
    }

    @Test("a failed read leaves the session behind, ready to read again")
    func failedRead() {
        var window = DeliveryWindow(maximumMessages: 4, maximumBytes: 100)
        window.readStarted()
        window.readFailed()
        #expect(window.isBehind && !window.isReading && window.isRefillDue)
    }
}
