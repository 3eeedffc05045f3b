import Testing

@testable import RunLoopIMCore

/// The session's delivery window as a value; FlowControlTests (RunLoopIMTests) drive it through a server.
@Suite("Delivery window")
struct DeliveryWindowTests {
    @Test("window bookkeeping: count and bytes bound it, one oversized message still goes alone, live messages wait while behind")
    func windowRules() {
        var window = DeliveryWindow(maximumMessages: 2, maximumBytes: 100)
        #expect(window.isBehind)
        let offeredWhileBehind = window.offerLive(bytes: 1)
        #expect(!offeredWhileBehind, "behind: live messages come from the store, in order")
        window.refilled(asked: 2, got: 0)
        #expect(!window.isBehind)
        #expect(window.admits(bytes: 500), "an empty window admits even a message larger than itself")
        window.sent(seq: 1, bytes: 500)
        #expect(!window.admits(bytes: 1))
        let offeredWhileFull = window.offerLive(bytes: 1)
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
}
