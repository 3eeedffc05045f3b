import Testing

@testable import RunLoopIMCore

/// The session's delivery window as a value; FlowControlTests (RunLoopIMTests) drive it through a server.
@Suite("Delivery window")
struct DeliveryWindowTests {
    /// Message `seq`, number `number` of alice's conversation with `to`.
    static func message(_ seq: UInt64, _ number: UInt64, to user: String = "bob") -> IMMessage {
        IMMessage(id: "m\(seq)", from: "alice", recipient: .user(user), text: "", seq: seq, sentAtMilliseconds: 0, conversationSeq: number)
    }

    @Test("limits beyond 32 bits are what LOGIN_ACK can announce: UInt32.max, and the window still admits by them")
    func limitsAtTheWiresWidth() {
        var window = DeliveryWindow(maximumMessages: 3, maximumBytes: Int(UInt32.max) + 10)
        #expect(window.maximumMessages == 3)
        #expect(window.maximumBytes == Int(UInt32.max))
        #expect(window.freeMessages == 3)
        window.readStarted()
        window.readFinished(asked: 3, got: 0)
        window.sent(Self.message(1, 1), bytes: Int(UInt32.max) - 1)
        #expect(window.admits(bytes: 1))
        #expect(!window.admits(bytes: 2))
        #expect(window.freeMessages == 2)
        #expect(DeliveryWindow(maximumMessages: 100, maximumBytes: 256 * 1024).maximumBytes == 256 * 1024)
    }

    @Test("window bookkeeping: count and bytes bound it, one oversized message still goes alone, live messages wait while behind")
    func windowRules() {
        var window = DeliveryWindow(maximumMessages: 2, maximumBytes: 100)
        #expect(window.isBehind)
        let offeredWhileBehind = window.offerLive(Self.message(1, 1), bytes: 1)
        #expect(!offeredWhileBehind, "behind: live messages come from the store, in order")
        window.readStarted()
        window.readFinished(asked: 2, got: 0)
        #expect(!window.isBehind)
        #expect(window.admits(bytes: 500), "an empty window admits even a message larger than itself")
        window.sent(Self.message(1, 1), bytes: 500)
        #expect(!window.admits(bytes: 1))
        let offeredWhileFull = window.offerLive(Self.message(2, 2), bytes: 1)
        #expect(!offeredWhileFull && window.isBehind, "full: the session falls behind")
        let refillDue = window.acknowledged([1])
        #expect(refillDue, "an ack frees room while behind: a refill is due")
        window.sent(Self.message(2, 2), bytes: 60)
        #expect(!window.admits(bytes: 50) && window.admits(bytes: 40))
        window.sent(Self.message(3, 1, to: "cid"), bytes: 40)
        #expect(window.freeMessages == 0)
        #expect(window.sentThrough == [.direct(between: "alice", and: "bob"): 2, .direct(between: "alice", and: "cid"): 1])
        let foreignAck = window.acknowledged([99])
        #expect(!foreignAck, "a foreign seq frees nothing")
    }

    @Test("the store may have more (a cluster's bus lost messages): behind again, and a read already out does not count as caught up")
    func storeMayHaveMore() {
        var window = DeliveryWindow(maximumMessages: 4, maximumBytes: 100)
        window.readStarted()
        window.readFinished(asked: 4, got: 0)
        #expect(!window.isBehind && !window.isRefillDue)
        window.storeMayHaveMore()
        #expect(window.isRefillDue, "caught up no more: the next read is due")
        window.readStarted()
        window.storeMayHaveMore()
        window.readFinished(asked: 4, got: 0)
        #expect(window.isBehind, "the read's snapshot may predate what the bus lost")
        window.readStarted()
        window.readFinished(asked: 4, got: 0)
        #expect(!window.isBehind)
    }

    @Test("one read at a time; a live message refused while a read is out keeps the session behind however short the answer")
    func liveOfferDuringRead() {
        var window = DeliveryWindow(maximumMessages: 4, maximumBytes: 100)
        #expect(window.isRefillDue)
        window.readStarted()
        #expect(!window.isRefillDue, "no second read while one is out")
        let offered = window.offerLive(Self.message(10, 1), bytes: 1)
        #expect(!offered, "behind while reading: the message waits in the store")
        window.readFinished(asked: 4, got: 0)
        #expect(window.isBehind && window.isRefillDue, "the read's snapshot may predate the refused message: read again")
        window.readStarted()
        window.readFinished(asked: 4, got: 1)
        #expect(!window.isBehind, "a short answer with no offer meanwhile: caught up")
        let live = window.offerLive(Self.message(11, 1), bytes: 1)
        #expect(live)
        window.sent(Self.message(11, 1), bytes: 1)
        let again = window.offerLive(Self.message(11, 1), bytes: 1)
        #expect(!again && !window.isBehind, "sent on this session already (a resend's second answer): not again, and not behind")
    }

    @Test("live messages go only in conversation order: a gap, or an unknown conversation past its first message, is read from the store")
    func conversationOrder() {
        var window = DeliveryWindow(maximumMessages: 10, maximumBytes: 1000)
        window.readStarted()
        window.readFinished(asked: 10, got: 0)
        let opening = window.offerLive(Self.message(1, 1), bytes: 1)
        #expect(opening, "a conversation's first message has nothing before it")
        window.sent(Self.message(1, 1), bytes: 1)
        let next = window.offerLive(Self.message(2, 2), bytes: 1)
        #expect(next)
        window.sent(Self.message(2, 2), bytes: 1)
        let gap = window.offerLive(Self.message(9, 4), bytes: 1)
        #expect(!gap && window.isBehind && window.isRefillDue, "number 3 never came this way: the store has it")

        var fresh = DeliveryWindow(maximumMessages: 10, maximumBytes: 1000)
        fresh.readStarted()
        fresh.readFinished(asked: 10, got: 0)
        let unknown = fresh.offerLive(Self.message(7, 5, to: "cid"), bytes: 1)
        #expect(!unknown && fresh.isBehind, "where the member's cursor is, only the store knows")

        var own = DeliveryWindow(maximumMessages: 10, maximumBytes: 1000)
        own.readStarted()
        own.readFinished(asked: 10, got: 0)
        own.sent(Self.message(1, 1), bytes: 1)
        own.passed(Self.message(2, 2))
        let afterOwn = own.offerLive(Self.message(3, 3), bytes: 1)
        #expect(afterOwn, "the user's own message is no gap")

        var unnumbered = DeliveryWindow(maximumMessages: 10, maximumBytes: 1000)
        unnumbered.readStarted()
        unnumbered.readFinished(asked: 10, got: 0)
        for seq: UInt64 in 1...3 {
            let live = unnumbered.offerLive(Self.message(seq, 0), bytes: 1)
            #expect(live, "a store that does not number conversations: messages go as they come")
            unnumbered.sent(Self.message(seq, 0), bytes: 1)
        }
        #expect(unnumbered.sentThrough.isEmpty)
    }

    @Test("a failed read leaves the session behind, ready to read again")
    func failedRead() {
        var window = DeliveryWindow(maximumMessages: 4, maximumBytes: 100)
        window.readStarted()
        window.readFailed()
        #expect(window.isBehind && !window.isReading && window.isRefillDue)
    }
}
