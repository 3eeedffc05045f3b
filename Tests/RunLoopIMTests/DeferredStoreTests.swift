import RunLoopChat
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// The server over a store that answers on later loop passes (``DeferredIMStore``): the paths a
/// synchronous store never takes. The delivery, flow-control and exactly-once tests run against it
/// too (``StoreKind/deferred``).
@Suite("A store that answers later")
struct DeferredStoreTests {
    static func send(_ id: String, to user: String, serial: UInt32) -> IMFrame {
        var message = IMChatMessage()
        message.id = id
        message.user = user
        message.text = "text of \(id)"
        return IMFrame(command: .send, serial: serial, message: message)
    }

    /// A peer logged in as `user`, its login settled with the store's answers.
    static func loggedIn(_ user: String, on server: IMServer, store: DeferredIMStore) -> MemoryLinkPeer {
        let peer = MemoryLinkPeer()
        peer.serverIsIdle = { store.isIdle }
        server.adopt(peer.serverEnd)
        peer.logIn(user)
        return peer
    }

    /// A server on `store` with alice logged in.
    static func serverWithAlice(_ store: DeferredIMStore) -> (IMServer, MemoryLinkPeer) {
        let server = IMServer(store: store)
        return (server, loggedIn("alice", on: server, store: store))
    }

    @Test("a session that ends before its SEND is answered gets nothing; the message is stored once, and its resend is answered with the first seq")
    func sessionEndsBeforeTheAnswer() async throws {
        try await onManualClockLoop { loop, _ in
            let store = DeferredIMStore(writeDelay: .seconds(1))
            let server = IMServer(store: store)
            var reports = 0
            var resends = 0
            server.onMessageStored = { _, _ in reports += 1 }
            server.onStoredMessageResent = { _, _ in resends += 1 }
            let bob = Self.loggedIn("bob", on: server, store: store)
            let alice = Self.loggedIn("alice", on: server, store: store)
            alice.send(Self.send("m1", to: "bob", serial: 7), settling: false)
            try alice.pair.settle()
            #expect(store.answersOut == 1, "the SEND reached the store; its answer is a second away")
            alice.pair.apply(.reset)
            try alice.pair.settle()
            #expect(server.onlineUsers == ["bob"])
            bob.settle()
            #expect(alice.received(.sendAck).isEmpty, "the session had ended: no answer")
            #expect(reports == 1 && store.inner.storedCount == 1)
            let delivered = try #require(bob.received(.deliver).first.flatMap(deliveredSeq))

            let again = Self.loggedIn("alice", on: server, store: store)
            again.send(Self.send("m1", to: "bob", serial: 2))
            let ack = try #require(again.received(.sendAck).last)
            let acknowledged = try ack.decode(IMSendAck.self).seq
            #expect(ack.code == .ok && acknowledged == delivered)
            bob.settle()
            #expect(reports == 1 && store.inner.storedCount == 1 && bob.received(.deliver).count == 1, "stored and shown once")
            #expect(resends == 1, "the resend is reported, for whoever the first report may not have reached")
        }
    }

    @Test("a session that ends while its inbox read and a JOIN are out: the answers come to nothing, and nothing stays counted out")
    func sessionEndsWithCallsOut() async throws {
        try await onManualClockLoop { loop, _ in
            let store = DeferredIMStore(writeDelay: .seconds(1), readDelay: .seconds(1))
            let server = IMServer(store: store)
            server.applicationHandler = ChatService()
            let bob = MemoryLinkPeer()
            server.adopt(bob.serverEnd)
            bob.logIn("bob", settling: false)
            try #require(try loop.runUntil(timeout: .seconds(10)) { server.onlineUsers == ["bob"] })
            bob.send(PageLimitTests.join("lobby", serial: 2), settling: false)
            try bob.pair.settle()
            #expect(store.answersOut == 4, "the first inbox read, the JOIN and bob's contacts (for his snapshot and his arrival)")
            bob.pair.apply(.reset)
            try #require(try loop.runUntil(timeout: .seconds(10)) { store.isIdle })
            try loop.run(.default, timeout: .milliseconds(10))
            #expect(server.sessions.isEmpty && server.storeCallsOut == 0)
            #expect(bob.received(.joinAck).isEmpty && store.inner.isMember("bob", of: .room("lobby")), "joined, though nobody heard")
        }
    }

    @Test("a message stored while the recipient's inbox read is out, and announced before its answer, is not left behind")
    func liveOfferDuringARead() async throws {
        try await onManualClockLoop { loop, _ in
            let store = DeferredIMStore(readDelay: .seconds(2))
            let (server, alice) = Self.serverWithAlice(store)
            let bob = MemoryLinkPeer()
            server.adopt(bob.serverEnd)
            bob.logIn("bob", settling: false)
            try #require(try loop.runUntil(timeout: .seconds(10)) { server.onlineUsers.contains("bob") })
            let readsBefore = store.inboxReads
            // Bob's first inbox read is out (its snapshot taken, its answer 2 s away): alice's message
            // is stored after the snapshot and offered live before the answer.
            alice.send(Self.send("m1", to: "bob", serial: 5), settling: false)
            try #require(try loop.runUntil(timeout: .seconds(1)) { alice.received(.sendAck).count == 1 })
            #expect(store.inboxReads == readsBefore && bob.received(.deliver).isEmpty, "refused live: the read is out")
            bob.serverIsIdle = { store.isIdle }
            bob.settle()
            #expect(bob.received(.deliver).count == 1, "the empty answer did not count as caught up: the session read again")
            let delivered = try #require(bob.received(.deliver).first).decode(IMChatMessage.self)
            #expect(delivered.conversationSeq == 1, "DELIVER carries the message's number in its conversation")
            #expect(store.inboxReads == readsBefore + 2)
        }
    }

    @Test("a SEND the store fails is kept by the client and sent again: stored once, shown once, whether its commit landed or not")
    func failedSends() async throws {
        try await onManualClockLoop { loop, clock in
            let store = DeferredIMStore()
            let bench = MemoryIMBench(loop: loop, clock: clock, store: store)
            let alice = bench.client(clientConfiguration("alice"))
            let bob = bench.client(clientConfiguration("bob"))
            let aliceLog = ClientRecorder(), bobLog = ClientRecorder()
            aliceLog.attach(to: alice)
            bobLog.attach(to: bob)
            try #require(try bench.runUntil { alice.state == .online && bob.state == .online })
            store.failNextSend(of: "lost", committed: false)
            store.failNextSend(of: "landed", committed: true)
            try alice.send("one", to: .user("bob"), id: "lost")
            try alice.send("two", to: .user("bob"), id: "landed")
            try #require(try bench.runUntil { aliceLog.storedCount == 2 })
            for id in ["lost", "landed"] {
                #expect(aliceLog.deliveries[id]?.contains(.sent(attempt: 2)) == true, "\(id) was sent again")
            }
            #expect(store.inner.storedCount == 2, "each stored once")
            // Nobody was told of "landed" when it was stored; "lost" comes after it in the conversation,
            // so bob's session reads the gap from the store rather than skip it: both, in order, in this
            // session (acknowledging "lost" alone would acknowledge "landed" too).
            try #require(try bench.runUntil { (try? store.inner.undelivered(for: "bob"))?.isEmpty == true })
            try bench.advance(by: .seconds(10))
            #expect(bobLog.messages.map(\.id) == ["landed", "lost"] && bobLog.messages.map(\.conversationSeq) == [1, 2])
            #expect(aliceLog.settledTwice.isEmpty && aliceLog.failedCount == 0)
            try bench.close()
        }
    }

    @Test("a failed inbox read ends nothing: the session reads again a second later")
    func failedReadIsRetried() async throws {
        try await onManualClockLoop { loop, _ in
            let store = DeferredIMStore()
            let server = IMServer(store: store)
            let waiting = IMMessage(id: "m1", from: "", recipient: .user("bob"), text: "hi", seq: 0, sentAtMilliseconds: 0)
            _ = store.inner.store(waiting, from: "alice", nowMilliseconds: 1)
            store.failInboxReads(1)
            let bob = Self.loggedIn("bob", on: server, store: store)
            #expect(bob.received(.deliver).isEmpty && bob.isOpen && store.inboxReads == 1)
            let failedAt = loop.now
            try #require(try loop.runUntil(timeout: .seconds(5)) { bob.received(.deliver).count == 1 })
            #expect(loop.now - failedAt == .seconds(1) && store.inboxReads == 2)
        }
    }

    @Test("a session that ends while its inbox read waits to be retried: the retry goes with it, and no read follows")
    func retryEndsWithItsSession() async throws {
        try await onManualClockLoop { loop, _ in
            let store = DeferredIMStore()
            let server = IMServer(store: store)
            store.failInboxReads(2)
            let bob = Self.loggedIn("bob", on: server, store: store)
            let carol = Self.loggedIn("carol", on: server, store: store)
            #expect(store.inboxReads == 2 && server.inboxRetries.count == 2, "a retry each, kept by the server")
            bob.pair.apply(.reset)
            try #require(try loop.runUntil(timeout: .seconds(5)) { server.onlineUsers == ["carol"] })
            #expect(server.inboxRetries.count == 1, "bob's retry went with his session")
            try loop.run(.default, timeout: .seconds(2))
            #expect(store.inboxReads == 3, "carol's inbox read again, bob's not")
            #expect(carol.isOpen && server.inboxRetries.count == 1, "carol's retry is hers until her session ends")
            carol.pair.apply(.reset)
            try #require(try loop.runUntil(timeout: .seconds(5)) { server.sessions.isEmpty })
            #expect(server.inboxRetries.isEmpty)
        }
    }

    @Test("shutdown reports done only once the store has answered every call out")
    func shutdownWaitsForTheStore() async throws {
        try await onManualClockLoop { loop, _ in
            let store = DeferredIMStore(writeDelay: .seconds(3))
            let (server, alice) = Self.serverWithAlice(store)
            alice.send(Self.send("m1", to: "bob", serial: 5), settling: false)
            try alice.pair.settle()
            let start = loop.now
            var doneAt: LoopInstant?
            server.shutdown { doneAt = loop.now }
            try #require(try loop.runUntil(timeout: .seconds(10)) { doneAt != nil })
            #expect(doneAt.map { $0 - start } == .seconds(3) && store.isIdle && server.sessions.isEmpty)
            #expect(store.inner.storedCount == 1 && alice.received(.sendAck).isEmpty)
        }
    }
}
