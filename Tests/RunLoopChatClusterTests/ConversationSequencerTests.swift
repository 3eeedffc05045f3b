import RunLoopChatCluster
import RunLoopIMCore
import RunLoopKit
import Testing

/// The sequencer's rules, with instants read from a manual clock.
@Suite("Conversation sequencer")
struct ConversationSequencerTests {
    let clock = ManualClock()
    let room = IMConversation.room("lobby")

    func message(_ number: UInt64, in room: String = "lobby") -> IMMessage {
        IMMessage(
            id: "m\(number)", from: "ann", recipient: .room(room), text: "\(number)", seq: 100 + number, sentAtMilliseconds: 1,
            conversationSeq: number)
    }

    func delivered(_ actions: [ConversationSequencer.Action]) -> [UInt64] {
        actions.compactMap { if case .deliver(let message) = $0 { message.conversationSeq } else { nil } }
    }

    @Test("a new conversation starts at the first number seen; the next passes, duplicates are dropped")
    func inOrderAndDuplicates() {
        var sequencer = ConversationSequencer()
        #expect(delivered(sequencer.receive(message(5), now: clock.now)) == [5])
        #expect(delivered(sequencer.receive(message(6), now: clock.now)) == [6])
        #expect(sequencer.receive(message(6), now: clock.now).isEmpty)
        #expect(sequencer.receive(message(5), now: clock.now).isEmpty)
        #expect(sequencer.lastDelivered(in: room) == 6)
    }

    @Test(
        "numbers below the first one seen were still on their way from other nodes: they pass when they come, with no fetch, and the conversation goes on from the first"
    )
    func earlierNumbersAfterTheFirstPass() {
        var sequencer = ConversationSequencer()
        // The node's own commit 9 comes first; other nodes' 1…8 were committed before it, their bus
        // entries later. Dropped, they would reach the members here only when something sent their
        // sessions back to the store.
        #expect(delivered(sequencer.receive(message(9), now: clock.now)) == [9])
        for number in [3, 1, 2, 8, 4, 5, 6, 7] as [UInt64] {
            #expect(sequencer.receive(message(number), now: clock.now) == [.deliver(message(number))])
        }
        #expect(sequencer.heldMessages == 0 && sequencer.nextDeadline == clock.now + sequencer.configuration.idleTimeout)
        #expect(delivered(sequencer.receive(message(10), now: clock.now)) == [10])
        #expect(sequencer.receive(message(9), now: clock.now).isEmpty, "the first number and later ones are duplicates")
        #expect(sequencer.lastDelivered(in: room) == 10)
    }

    @Test("a message ahead is held and the gap fetched; the store's answer passes the gap and the held one in order")
    func gapFilledByTheStore() {
        var sequencer = ConversationSequencer()
        _ = sequencer.receive(message(1), now: clock.now)
        #expect(sequencer.receive(message(4), now: clock.now) == [.fetch(room, after: 1, before: 4)])
        #expect(sequencer.heldMessages == 1)
        #expect(sequencer.receive(message(5), now: clock.now).isEmpty)
        let actions = sequencer.fetched([message(3), message(2), message(4)], in: room, now: clock.now)
        #expect(actions == [.deliver(message(2)), .deliver(message(3)), .deliver(message(4)), .deliver(message(5))])
        #expect(sequencer.heldMessages == 0)
    }

    @Test("late bus entries close the gap too, and its deadline goes")
    func gapFilledByLateEntries() {
        var sequencer = ConversationSequencer(configuration: .init(gapDeadline: .seconds(2), idleTimeout: .seconds(600)))
        _ = sequencer.receive(message(1), now: clock.now)
        _ = sequencer.receive(message(3), now: clock.now)
        #expect(sequencer.nextDeadline == clock.now + .seconds(2))
        #expect(delivered(sequencer.receive(message(2), now: clock.now)) == [2, 3])
        #expect(sequencer.nextDeadline == clock.now + .seconds(600))
        clock.advance(by: .seconds(3))
        #expect(sequencer.tick(now: clock.now).isEmpty)
        // The fetch's answer coming after all is only duplicates.
        #expect(sequencer.fetched([message(2)], in: room, now: clock.now).isEmpty)
    }

    @Test("a gap still open at its deadline is asked again; after the last attempt the store takes the conversation")
    func gapDeadline() {
        var sequencer = ConversationSequencer(configuration: .init(gapDeadline: .seconds(2), maxFetchAttempts: 2))
        _ = sequencer.receive(message(1), now: clock.now)
        #expect(sequencer.receive(message(3), now: clock.now) == [.fetch(room, after: 1, before: 3)])
        clock.advance(by: .seconds(1))
        #expect(sequencer.tick(now: clock.now).isEmpty)
        clock.advance(by: .seconds(1))
        #expect(sequencer.tick(now: clock.now) == [.fetch(room, after: 1, before: 3)])
        // An empty answer narrows nothing: no new ask until the deadline.
        #expect(sequencer.fetched([], in: room, now: clock.now).isEmpty)
        clock.advance(by: .seconds(2))
        #expect(sequencer.tick(now: clock.now) == [.reread(room)])
        #expect(sequencer.heldMessages == 0)
        #expect(sequencer.lastDelivered(in: room) == nil)
        // Forgotten: the next message starts it again.
        #expect(delivered(sequencer.receive(message(9), now: clock.now)) == [9])
    }

    @Test("an answer that closes a gap only partly asks for the rest at once")
    func partialAnswer() {
        var sequencer = ConversationSequencer()
        _ = sequencer.receive(message(1), now: clock.now)
        _ = sequencer.receive(message(3), now: clock.now)
        _ = sequencer.receive(message(6), now: clock.now)
        let actions = sequencer.fetched([message(2)], in: room, now: clock.now)
        #expect(actions == [.deliver(message(2)), .deliver(message(3)), .fetch(room, after: 3, before: 6)])
    }

    @Test("answers that narrow a gap start its attempts over")
    func progressResetsAttempts() {
        var sequencer = ConversationSequencer(configuration: .init(gapDeadline: .seconds(2), maxFetchAttempts: 1))
        _ = sequencer.receive(message(1), now: clock.now)
        _ = sequencer.receive(message(5), now: clock.now)
        #expect(sequencer.fetched([message(2)], in: room, now: clock.now) == [.deliver(message(2)), .fetch(room, after: 2, before: 5)])
        #expect(sequencer.fetched([message(3)], in: room, now: clock.now) == [.deliver(message(3)), .fetch(room, after: 3, before: 5)])
        clock.advance(by: .seconds(2))
        #expect(sequencer.tick(now: clock.now) == [.reread(room)])
    }

    @Test("past the cap on held messages the conversation holding most is handed to the store")
    func heldCap() {
        var sequencer = ConversationSequencer(configuration: .init(maxHeldMessages: 3))
        let other = IMConversation.room("other")
        _ = sequencer.receive(message(1), now: clock.now)
        _ = sequencer.receive(message(1, in: "other"), now: clock.now)
        _ = sequencer.receive(message(3), now: clock.now)
        _ = sequencer.receive(message(4), now: clock.now)
        _ = sequencer.receive(message(3, in: "other"), now: clock.now)
        #expect(sequencer.heldMessages == 3)
        #expect(sequencer.receive(message(5), now: clock.now) == [.reread(room)])
        #expect(sequencer.heldMessages == 1)
        #expect(sequencer.lastDelivered(in: other) == 1)
    }

    @Test("an idle conversation is forgotten, one with a held message is not")
    func idleConversationsAreForgotten() {
        var sequencer = ConversationSequencer(configuration: .init(gapDeadline: .seconds(1), maxFetchAttempts: 100, idleTimeout: .seconds(60)))
        _ = sequencer.receive(message(1), now: clock.now)
        _ = sequencer.receive(message(1, in: "held"), now: clock.now)
        _ = sequencer.receive(message(3, in: "held"), now: clock.now)
        #expect(sequencer.conversationCount == 2)
        clock.advance(by: .seconds(30))
        _ = sequencer.receive(message(2), now: clock.now)
        clock.advance(by: .seconds(30))
        _ = sequencer.tick(now: clock.now)
        #expect(sequencer.conversationCount == 2)
        clock.advance(by: .seconds(60))
        _ = sequencer.tick(now: clock.now)
        #expect(sequencer.conversationCount == 1)
        #expect(sequencer.lastDelivered(in: .room("held")) == 1)
    }

    @Test("conversations are sequenced apart; a message without a number passes at once")
    func independentConversations() {
        var sequencer = ConversationSequencer()
        let direct = IMMessage(id: "d", from: "bob", recipient: .user("ann"), text: "", seq: 7, sentAtMilliseconds: 1, conversationSeq: 4)
        _ = sequencer.receive(message(1), now: clock.now)
        #expect(delivered(sequencer.receive(direct, now: clock.now)) == [4])
        #expect(delivered(sequencer.receive(message(2), now: clock.now)) == [2])
        let unnumbered = IMMessage(id: "u", from: "bob", recipient: .room("lobby"), text: "", seq: 8, sentAtMilliseconds: 1)
        #expect(sequencer.receive(unnumbered, now: clock.now) == [.deliver(unnumbered)])
        #expect(sequencer.receive(unnumbered, now: clock.now) == [.deliver(unnumbered)])
    }
}
