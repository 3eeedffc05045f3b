import RunLoopChat
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// Issue 22: presence goes to the users who share a room or a direct conversation with the user (its
/// audience, the chat application's answer), so a login's cost does not grow with the users online.
@Suite("Presence audience")
struct PresenceAudienceTests {
    /// A chat server on an in-memory store whose rooms and direct conversations a test sets up.
    final class Fixture {
        /// ChatService, counting the audiences it is asked for, by user.
        struct CountingService: IMApplicationHandler {
            let chat = ChatService()
            let asked: Box<[String: Int]>

            func answer(_ request: IMFrame, from user: String, on server: IMServer, reply: @escaping (IMFrame) -> Void) throws(IMFrameError) {
                try chat.answer(request, from: user, on: server, reply: reply)
            }

            func presenceAudience(of user: String, on server: IMServer, completion: @escaping (IMPresenceAudience) -> Void) {
                asked.value[user, default: 0] += 1
                chat.presenceAudience(of: user, on: server, completion: completion)
            }
        }

        let store = InMemoryIMStore()
        let server: IMServer
        let audiencesAsked = Box<[String: Int]>([:])
        private(set) var peers: [String: MemoryLinkPeer] = [:]

        init(settings: IMServer.Settings = .withoutLoginLimits) {
            server = IMServer(store: store, settings: settings)
            server.applicationHandler = CountingService(asked: audiencesAsked)
        }

        func join(_ users: [String], _ room: String) {
            for user in users { _ = store.join(room: room, user: user) }
        }

        /// A stored direct message: the two share a direct conversation from now on.
        func converse(_ a: String, _ b: String) {
            let message = IMMessage(id: "\(a)-\(b)", from: "", recipient: .user(b), text: "hi", seq: 0, sentAtMilliseconds: 0)
            _ = store.store(message, from: a, nowMilliseconds: 0)
        }

        @discardableResult
        func logIn(_ user: String, keepingFrames: Bool = true) -> MemoryLinkPeer {
            let peer = MemoryLinkPeer()
            peer.keepsFrames = keepingFrames
            server.adopt(peer.serverEnd)
            peer.logIn(user)
            peers[user] = peer
            return peer
        }

        /// Runs the loop until what is queued now (the pass's announcement among it) has run.
        func settle() throws {
            let settled = Box(false)
            try server.loop.performFromLoopThread(inModes: [.common]) { settled.value = true }
            try #require(try spin(server.loop) { settled.value })
            for peer in peers.values { peer.settle() }
        }

        func presence(seenBy user: String) -> [String] {
            (peers[user]?.received(.presence) ?? []).compactMap { frame in
                (try? frame.decode(IMPresenceNotice.self)).map { "\($0.user) \($0.online ? "online" : "offline")" }
            }
        }
    }

    @Test("a user's arrival and departure reach those who share a room or a direct conversation with them, and nobody else")
    func audienceOnly() async throws {
        try await onLoopThread {
            let chat = Fixture()
            chat.join(["alice", "bob"], "lobby")
            chat.converse("dana", "alice")
            for user in ["bob", "carol", "dana"] { chat.logIn(user) }
            let alice = chat.logIn("alice")
            try chat.settle()
            #expect(chat.presence(seenBy: "bob") == ["alice online"])
            #expect(chat.presence(seenBy: "dana") == ["alice online"])
            #expect(chat.presence(seenBy: "carol").isEmpty, "carol shares nothing with anyone")
            #expect(chat.presence(seenBy: "alice") == ["bob online", "dana online"], "alice's snapshot: her contacts online")
            alice.pair.apply(.reset)
            try chat.settle()
            #expect(chat.presence(seenBy: "bob") == ["alice online", "alice offline"])
            #expect(chat.presence(seenBy: "dana") == ["alice online", "alice offline"])
            #expect(chat.presence(seenBy: "carol").isEmpty)
        }
    }

    @Test("the snapshot after LOGIN_ACK holds only the audience online, all of it, in pages of presenceSnapshotPage")
    func snapshotIsPaged() async throws {
        try await onLoopThread {
            var settings = IMServer.Settings.withoutLoginLimits
            settings.presenceSnapshotPage = 3
            let chat = Fixture(settings: settings)
            let members = (0..<7).map { "m\($0)" }
            chat.join(members + ["newcomer"], "lobby")
            for user in members + ["x0", "x1", "x2"] { chat.logIn(user, keepingFrames: false) }
            try chat.settle()
            chat.logIn("newcomer")
            // Three pages (3, 3, 1), a pass apart.
            try #require(try spin(chat.server.loop) { chat.peers["newcomer"]?.received(.presence).count == 7 })
            try chat.settle()
            try chat.settle()
            let seen = chat.presence(seenBy: "newcomer")
            #expect(seen.sorted() == members.map { "\($0) online" }, "\(seen)")
        }
    }

    @Test("the frames a login costs are the same with 10 or 1,000 unrelated users online")
    func loginCostDoesNotGrowWithUsersOnline() async throws {
        try await onLoopThread {
            func framesOfOneLogin(unrelatedOnline: Int) throws -> Int {
                let chat = Fixture()
                chat.join(["newcomer", "friend"], "lobby")
                for index in 0..<unrelatedOnline { chat.logIn("u\(index)") }
                chat.logIn("friend")
                try chat.settle()
                // Login and presence frames only: a slow machine may drop an early session for silence.
                func sent() -> Int { chat.peers.values.reduce(0) { $0 + $1.received(.loginAck).count + $1.received(.presence).count } }
                let before = sent()
                chat.logIn("newcomer")
                try chat.settle()
                return sent() - before
            }
            let few = try framesOfOneLogin(unrelatedOnline: 10)
            let many = try framesOfOneLogin(unrelatedOnline: 1_000)
            // LOGIN_ACK and the snapshot (the friend online) to the newcomer, its arrival to the friend.
            #expect(few == 3)
            #expect(many == few)
        }
    }

    @Test("a login reads its user's audience once: the snapshot's read serves the pass's announcement")
    func loginReadsTheAudienceOnce() async throws {
        try await onLoopThread {
            let chat = Fixture()
            chat.converse("alice", "bob")
            for user in ["bob", "alice"] {
                chat.logIn(user)
                try chat.settle()
            }
            #expect(chat.audiencesAsked.value["alice"] == 1)
            #expect(chat.presence(seenBy: "bob") == ["alice online"])
            #expect(chat.presence(seenBy: "alice") == ["bob online"])
            // Her departure is a later pass: its announcement reads the audience again.
            chat.peers["alice"]?.pair.apply(.reset)
            try chat.settle()
            #expect(chat.audiencesAsked.value["alice"] == 2)
            #expect(chat.presence(seenBy: "bob") == ["alice online", "alice offline"])
        }
    }

    @Test("an announcement reaches each session of its audience once per user: one user alone, or several in one pass")
    func announcementReachesEachSessionOnce() async throws {
        try await onLoopThread {
            let chat = Fixture()
            chat.join(["watcher", "a", "b", "c"], "lobby")
            let first = chat.logIn("watcher")
            let second = MemoryLinkPeer()
            chat.server.adopt(second.serverEnd)
            second.logIn("watcher")
            try chat.settle()
            second.settle()
            func seen(_ peer: MemoryLinkPeer) -> [String] {
                peer.received(.presence).compactMap { try? $0.decode(IMPresenceNotice.self) }.map { "\($0.user) \($0.online)" }
            }
            // One user's arrival: the announcement's one frame, once to each session.
            chat.logIn("a")
            try chat.settle()
            second.settle()
            #expect(seen(first) == ["a true"])
            #expect(seen(second) == ["a true"])
            // Two arrivals in one pass: each session gets both, once each.
            chat.logIn("b")
            chat.logIn("c")
            try chat.settle()
            second.settle()
            #expect(seen(first).sorted() == ["a true", "b true", "c true"])
            #expect(seen(second).sorted() == ["a true", "b true", "c true"])
            #expect(seen(chat.peers["a"]!).sorted() == ["b true", "c true", "watcher true"], "a's snapshot, then b and c")
        }
    }

    @Test("a user who drops and comes back within one pass is no change to their audience")
    func coalescedPerPass() async throws {
        try await onLoopThread {
            let chat = Fixture()
            chat.join(["watcher", "flaky"], "lobby")
            chat.logIn("watcher")
            let first = chat.logIn("flaky")
            try chat.settle()
            #expect(chat.presence(seenBy: "watcher") == ["flaky online"])
            first.pair.apply(.reset)
            let second = MemoryLinkPeer()
            chat.server.adopt(second.serverEnd)
            second.logIn("flaky")
            try chat.settle()
            #expect(chat.presence(seenBy: "watcher") == ["flaky online"], "offline-then-online in one pass is no change")
        }
    }

    @Test("JOIN makes the room's members and the joiner see each other's presence at once")
    func joinWidensTheAudience() async throws {
        try await onLoopThread {
            let chat = Fixture()
            chat.join(["alice"], "lobby")
            chat.logIn("alice")
            let bob = chat.logIn("bob")
            try chat.settle()
            #expect(chat.presence(seenBy: "bob").isEmpty && chat.presence(seenBy: "alice").isEmpty)
            var request = IMRoomRequest()
            request.room = "lobby"
            bob.send(IMFrame(command: .join, serial: 7, message: request))
            try chat.settle()
            #expect(bob.received(.joinAck).first?.code == .ok)
            #expect(chat.presence(seenBy: "bob") == ["alice online"])
            #expect(chat.presence(seenBy: "alice") == ["bob online"])
        }
    }

    @Test("a graceful shutdown tells clients shuttingDown, and nobody that anyone went offline")
    func noOfflineStormOnShutdown() async throws {
        try await onLoopThread {
            let chat = Fixture()
            let everyone = (0..<20).map { "u\($0)" }
            chat.join(everyone, "lobby")
            for user in everyone { chat.logIn(user) }
            try chat.settle()
            var offline = 0
            chat.server.onPresenceChange = { _, _, online in offline += online ? 0 : 1 }
            chat.server.shutdown()
            try #require(try spin(chat.server.loop) { chat.server.sessions.isEmpty && offline == 20 })
            try chat.settle()
            for user in everyone {
                #expect(!chat.presence(seenBy: user).contains { $0.hasSuffix("offline") }, "\(user): \(chat.presence(seenBy: user))")
                #expect(chat.peers[user]?.received(.error).last?.code == .shuttingDown)
            }
        }
    }
}
