import RunLoopChat
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// The entry points a cluster of nodes uses (IMServer+Cluster), on one server with a store shared
/// "with other nodes" that the test writes to directly.
@Suite("Server as a cluster node")
struct ClusterHooksTests {
    static func loggedIn(_ user: String, on server: IMServer) -> MemoryLinkPeer {
        let peer = MemoryLinkPeer()
        server.adopt(peer.serverEnd)
        peer.logIn(user)
        return peer
    }

    static func outgoing(_ id: String, to recipient: IMRecipient) -> IMMessage {
        IMMessage(id: id, from: "", recipient: recipient, text: id, seq: 0, sentAtMilliseconds: 0)
    }

    /// Stores a message as another node would: straight into the shared store.
    static func storedElsewhere(_ store: InMemoryIMStore, _ id: String, from sender: String, to recipient: IMRecipient) throws -> IMMessage {
        guard case .stored(let message, _, _) = store.store(outgoing(id, to: recipient), from: sender, nowMilliseconds: 1) else {
            throw TestFailure("\(id) not stored")
        }
        return message
    }

    @Test("a message stored by another node goes to the given users' sessions here, in conversation order, never to others")
    func deliverStored() async throws {
        try await onManualClockLoop { _, _ in
            let store = InMemoryIMStore()
            let server = IMServer(store: store)
            let bob = Self.loggedIn("bob", on: server)
            let cid = Self.loggedIn("cid", on: server)
            let first = try Self.storedElsewhere(store, "m1", from: "alice", to: .user("bob"))
            let second = try Self.storedElsewhere(store, "m2", from: "alice", to: .user("bob"))
            server.deliverStored(second, to: ["bob"])
            bob.settle()
            #expect(bob.received(.deliver).compactMap(deliveredSeq) == [first.seq, second.seq], "a gap is read from the store, in order")
            server.deliverStored(second, to: ["bob"])
            bob.settle()
            #expect(bob.received(.deliver).count == 2, "sent already: not again")
            let third = try Self.storedElsewhere(store, "m3", from: "alice", to: .user("bob"))
            server.deliverStored(third, to: ["bob"])
            bob.settle()
            cid.settle()
            #expect(bob.received(.deliver).compactMap(deliveredSeq) == [first.seq, second.seq, third.seq], "the next one goes live")
            #expect(cid.received(.deliver).isEmpty)
        }
    }

    @Test("re-reading inboxes brings what no live delivery did (the window's rule for a read out meanwhile: DeliveryWindowTests)")
    func rereadInboxes() async throws {
        try await onManualClockLoop { _, _ in
            let store = DeferredIMStore()
            let server = IMServer(store: store)
            let bob = MemoryLinkPeer()
            bob.serverIsIdle = { store.isIdle }
            server.adopt(bob.serverEnd)
            bob.logIn("bob")
            #expect(bob.received(.deliver).isEmpty)
            let lost = try Self.storedElsewhere(store.inner, "m1", from: "alice", to: .user("bob"))
            bob.settle()
            #expect(bob.received(.deliver).isEmpty, "nobody told the server")
            server.rereadInboxes()
            bob.settle()
            #expect(bob.received(.deliver).compactMap(deliveredSeq) == [lost.seq])
        }
    }

    @Test("presence: a user the cluster says is online is announced online here, and offline once neither here nor there")
    func clusterPresence() async throws {
        try await onManualClockLoop { loop, _ in
            let server = IMServer(store: InMemoryIMStore())
            var reports: [String] = []
            server.onPresenceChange = { _, user, online in reports.append("\(user) \(online)") }
            let bob = Self.loggedIn("bob", on: server)
            server.setClusterPresence("alice", online: true)
            bob.settle()
            let alice = Self.loggedIn("alice", on: server)
            bob.settle()
            alice.pair.apply(.reset)
            try alice.pair.settle()
            bob.settle()
            #expect(server.onlineUsers == ["bob"])
            #expect(reports == ["bob true", "alice true"], "alice stays online while the cluster says so")
            server.setClusterPresence("alice", online: false)
            // The announcement comes at the end of the pass, with nothing on the wire before it.
            try loop.runUntil(timeout: .seconds(1)) { reports.count == 3 }
            bob.settle()
            #expect(reports == ["bob true", "alice true", "alice false"])
            #expect(bob.received(.presence).count == 2)
        }
    }

    @Test("admission: the cluster's refusal is the local limit's LOGIN_ACK; admitted sessions are reported when they end, once")
    func admission() async throws {
        try await onManualClockLoop { _, _ in
            var settings = IMServer.Settings()
            settings.maximumSessionsPerUser = 2
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            var asked: [(String, Int?)] = []
            var admits = true
            var ended: [String] = []
            server.sessionAdmission = { user, limit, answer in
                asked.append((user, limit))
                answer(admits)
            }
            server.onAdmittedSessionEnd = { ended.append($0) }
            let first = Self.loggedIn("alice", on: server)
            #expect(server.onlineUsers == ["alice"])
            admits = false
            let second = MemoryLinkPeer()
            server.adopt(second.serverEnd)
            let ack = try #require(second.logIn("alice"))
            #expect(ack.code == .tooManyConnections)
            #expect(asked.map(\.0) == ["alice", "alice"] && asked.map(\.1) == [2, 2])
            #expect(ended.isEmpty, "a refused session was never admitted")
            first.pair.apply(.reset)
            first.settle()
            #expect(ended == ["alice"])
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
