import RunLoopChat
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

/// Storing, resending, abandoning, reading the inbox and acknowledging, against a real PostgreSQL.
@Suite struct MessageStoreTests {
    @Test("a resend gets the first row back; an abandoned id is refused for good; a stored one answers its seq")
    func storeResendAbandon() async throws {
        let database = try await ChatDatabase.start()
        let (first, resend, outcomes, afterAbandon, count) = try await onLoopThread {
            let store = try database.store()
            let first = try store.send("hi", id: "m1", from: "alice", to: .user("bob"), at: 42)
            let resend = try store.send("hi again", id: "m1", from: "alice", to: .user("bob"), at: 99)
            let outcomes = try store.abandoning(["m1", "m2"], from: "alice")
            let afterAbandon = try store.send("late", id: "m2", from: "alice", to: .user("bob"))
            let count = try execute(try database.connect(), "SELECT count(*) FROM messages").int(0, 0)
            return (first, resend, outcomes, afterAbandon, count)
        }
        guard case .stored(let message, let recipients, true) = first else {
            Issue.record("first: \(first)")
            return
        }
        #expect(message.from == "alice" && message.text == "hi" && message.sentAtMilliseconds == 42)
        #expect(message.seq > 0 && message.conversationSeq == 1)
        #expect(recipients == ["bob"])
        #expect(resend == .stored(message, recipients: ["bob"], isNew: false))
        #expect(outcomes == [IMAbandonOutcome(id: "m1", storedSeq: message.seq), IMAbandonOutcome(id: "m2", storedSeq: nil)])
        #expect(afterAbandon == .refused(.badRequest))
        #expect(count == 1)
    }

    @Test("a resend names only the recipients who have not acknowledged it, as the other stores do")
    func resendRecipients() async throws {
        let database = try await ChatDatabase.start()
        let (directAgain, roomAgain) = try await onLoopThread {
            let store = try database.store()
            let direct = try store.stored("hi", id: "d1", from: "alice", to: .user("bob"))
            store.acknowledge([direct.seq], for: "bob")
            for user in ["alice", "bob", "cid"] { _ = try store.joining("r", user) }
            let room = try store.stored("all", id: "r1", from: "alice", to: .room("r"))
            store.acknowledge([room.seq], for: "cid")
            return (
                try store.send("hi", id: "d1", from: "alice", to: .user("bob")), try store.send("all", id: "r1", from: "alice", to: .room("r"))
            )
        }
        guard case .stored(_, let direct, false) = directAgain, case .stored(_, let room, false) = roomAgain else {
            Issue.record("\(directAgain) \(roomAgain)")
            return
        }
        #expect(direct.isEmpty, "bob acknowledged it")
        #expect(room == ["bob"], "cid acknowledged it, the sender is never one")
    }

    @Test("ids with the characters an array literal quotes round-trip; an empty abandon asks nothing")
    func awkwardIDs() async throws {
        let database = try await ChatDatabase.start()
        let ids = ["a,b", "q\"uote", "back\\slash", "{brace}", " space ", "NULL", ""]
        let (outcomes, none) = try await onLoopThread {
            let store = try database.store()
            _ = try store.stored("kept", id: "{brace}", from: "alice", to: .user("bob"))
            return (try store.abandoning(ids, from: "alice"), try store.abandoning([], from: "alice"))
        }
        #expect(outcomes.map(\.id) == ids)
        #expect(outcomes.map { $0.storedSeq != nil } == ids.map { $0 == "{brace}" })
        #expect(none.isEmpty)
    }

    @Test("refused for good: an empty id, text PostgreSQL cannot hold, a room the sender is not in, an unknown user")
    func refusals() async throws {
        let database = try await ChatDatabase.start()
        let results = try await onLoopThread {
            let store = try database.store()
            store.requiresKnownRecipients = true
            _ = try store.login("bob", "any")
            _ = try store.joining("lobby", "bob")
            return [
                try store.send("x", id: "", from: "alice", to: .user("bob")),
                try store.send("nul \u{0} inside", id: "n", from: "alice", to: .user("bob")),
                try store.send("x", id: "r", from: "alice", to: .room("lobby")),
                try store.send("x", id: "u", from: "alice", to: .user("nobody")),
                try store.send("x", id: "k", from: "alice", to: .user("bob"))
            ]
        }
        #expect(results[0] == .refused(.badRequest))
        #expect(results[1] == .refused(.badRequest))
        #expect(results[2] == .refused(.unknownRecipient))
        #expect(results[3] == .refused(.unknownRecipient))
        if case .stored(_, ["bob"], true) = results[4] {} else { Issue.record("to a known user: \(results[4])") }
    }

    @Test("a direct conversation numbers both directions 1, 2, 3; a sender's caught-up cursor follows their own message")
    func directConversationAndCursors() async throws {
        let database = try await ChatDatabase.start()
        let (sent, bobsInbox, alicesInbox, afterAck) = try await onLoopThread {
            let store = try database.store()
            let sent = [
                try store.stored("1", id: "a1", from: "alice", to: .user("bob")),
                try store.stored("2", id: "b1", from: "bob", to: .user("alice")),
                try store.stored("3", id: "a2", from: "alice", to: .user("bob"))
            ]
            let bobsInbox = try store.inbox("bob")
            let alicesInbox = try store.inbox("alice")
            store.acknowledge([sent[2].seq], for: "bob")
            return (sent, bobsInbox, alicesInbox, try store.inbox("bob"))
        }
        #expect(sent.map(\.conversationSeq) == [1, 2, 3])
        #expect(sent.map(\.seq) == sent.map(\.seq).sorted())
        // Bob had not caught up when he answered (message 1 unacknowledged): his cursor stays.
        #expect(bobsInbox.map(\.id) == ["a1", "a2"])
        // Alice's cursor moved with her first message; her second came after Bob's, so it stayed there.
        #expect(alicesInbox.map(\.id) == ["b1"])
        #expect(alicesInbox.first == sent[1])
        #expect(afterAck.isEmpty)
    }

    @Test("acknowledging a message acknowledges the earlier ones of its conversation, and never moves a cursor back")
    func cumulativeAcknowledgement() async throws {
        let database = try await ChatDatabase.start()
        let (afterSecond, afterFirst, afterHuge) = try await onLoopThread {
            let store = try database.store()
            let sent = try (1...4).map { try store.stored("\($0)", id: "m\($0)", from: "alice", to: .user("bob")) }
            store.acknowledge([sent[1].seq], for: "bob")
            let afterSecond = try store.inbox("bob")
            store.acknowledge([sent[0].seq], for: "bob")
            let afterFirst = try store.inbox("bob")
            store.acknowledge([UInt64.max, 987_654], for: "bob")
            return (afterSecond, afterFirst, try store.inbox("bob"))
        }
        #expect(afterSecond.map(\.id) == ["m3", "m4"])
        #expect(afterFirst.map(\.id) == ["m3", "m4"])
        #expect(afterHuge.map(\.id) == ["m3", "m4"])
    }

    @Test("the inbox comes a conversation at a time, in order within each, past what `after` names, at most `limit`")
    func inboxOrderAndAfter() async throws {
        let database = try await ChatDatabase.start()
        let (all, skipped, window, room) = try await onLoopThread {
            let store = try database.store()
            _ = try store.joining("lobby", "bob")
            _ = try store.joining("lobby", "carol")
            // Interleaved over three conversations, made in this order: the lobby (at the first
            // join), carol↔bob, alice↔bob.
            _ = try store.stored("c1", id: "c1", from: "carol", to: .user("bob"))
            _ = try store.stored("l1", id: "l1", from: "carol", to: .room("lobby"))
            _ = try store.stored("a1", id: "a1", from: "alice", to: .user("bob"))
            _ = try store.stored("c2", id: "c2", from: "carol", to: .user("bob"))
            _ = try store.stored("l2", id: "l2", from: "carol", to: .room("lobby"))
            _ = try store.stored("a2", id: "a2", from: "alice", to: .user("bob"))
            let all = try store.inbox("bob")
            let skipped = try store.inbox("bob", after: [.direct(between: "bob", and: "carol"): 1, .room("lobby"): 2])
            let window = try store.inbox("bob", limit: 3)
            return (all, skipped, window, IMConversation.room("lobby"))
        }
        #expect(all.map(\.id) == ["l1", "l2", "c1", "c2", "a1", "a2"])
        #expect(all.map(\.conversationSeq) == [1, 2, 1, 2, 1, 2])
        #expect(all.filter { $0.conversation == room }.allSatisfy { $0.recipient == .room("lobby") })
        #expect(skipped.map(\.id) == ["c2", "a1", "a2"])
        #expect(window.map(\.id) == ["l1", "l2", "c1"])
    }

    @Test("two nodes sending 200 messages each into one room, pipelined and interleaved: numbers 1…400, no gap, in commit order")
    func contiguousSequencesAcrossNodes() async throws {
        let database = try await ChatDatabase.start()
        let (results, lastSeq) = try await onLoopThread {
            let first = try database.store()
            let second = try database.store()
            _ = try first.joining("busy", "alice")
            _ = try first.joining("busy", "bob")
            var results: [IMStoreResult] = []
            for index in 0..<200 {
                for (store, sender) in [(first, "alice"), (second, "bob")] {
                    let message = PostgresChatStore.outgoing("\(index)", id: "\(sender)-\(index)", to: .room("busy"))
                    store.store(message, from: sender, nowMilliseconds: 1) { results.append($0) }
                }
            }
            try spin(first.loop, for: .seconds(120)) { results.count == 400 }
            let last = try execute(try database.connect(), "SELECT last_seq FROM conversations WHERE room = 'busy'").int(0, 0)
            return (results, last)
        }
        #expect(results.count == 400)
        let refused = results.filter { if case .stored(_, _, true) = $0 { false } else { true } }
        #expect(refused.isEmpty, "\(refused)")
        #expect(lastSeq == 400)
        let stored = try await onLoopThread { try MessageStoreTests.roomRows(database, "busy") }
        #expect(stored.map(\.conversationSeq) == Array(1...400))
        // seq is taken under the conversation's lock: it rises with the conversation's numbers.
        #expect(stored.map(\.seq) == stored.map(\.seq).sorted())
        for sender in ["alice", "bob"] {
            // Each node's pipeline commits in the order it sent.
            #expect(stored.filter { $0.from == sender }.map(\.text) == (0..<200).map { "\($0)" })
        }
    }

    /// The room's messages by conversation sequence.
    static func roomRows(_ database: ChatDatabase, _ room: String) throws -> [IMMessage] {
        let store = try database.store()
        // A member reads the whole room back through history, newest first.
        _ = try store.joining(room, "reader")
        guard case .success(let page) = try store.page(.room(room), for: "reader", limit: 10_000) else { throw TestFailure("no history") }
        return page.messages.reversed()
    }
}
