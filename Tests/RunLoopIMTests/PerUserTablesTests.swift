import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// Issue 22: what the server keeps per user online is one entry in each table it needs, with no
/// second table to find the first one's key and no array for the usual one session.
@Suite("Per-user tables")
struct PerUserTablesTests {
    /// A LOGIN of `user` naming the client instance `instance`.
    func logIn(_ peer: MemoryLinkPeer, _ user: String, instance: String) {
        var login = IMLoginRequest()
        login.user = user
        login.password = "pw"
        login.keepaliveSeconds = 30
        login.clientInstance = instance
        peer.send(IMFrame(command: .login, serial: 1, message: login))
    }

    @Test("a user's sessions are held inline while there is one, in an array while there are more, in the order they came")
    func userSessions() async throws {
        try await onLoopThread {
            #expect(MemoryLayout<UserSessions>.size == MemoryLayout<IMServerSession>.size)
            let server = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let peers = (0..<3).map { _ in MemoryLinkPeer() }
            for peer in peers { server.adopt(peer.serverEnd) }
            let (a, b, c) = (server.sessions[0], server.sessions[1], server.sessions[2])
            var sessions: UserSessions = []
            #expect(sessions.isEmpty && !sessions.isInline)
            sessions.append(a)
            #expect(sessions.isInline && sessions.map(ObjectIdentifier.init) == [ObjectIdentifier(a)])
            sessions.append(b)
            sessions.append(c)
            #expect(!sessions.isInline && sessions.map(ObjectIdentifier.init) == [a, b, c].map(ObjectIdentifier.init))
            sessions.remove(a)
            #expect(!sessions.isInline && sessions.map(ObjectIdentifier.init) == [b, c].map(ObjectIdentifier.init))
            sessions.remove(c)
            #expect(sessions.isInline && sessions.map(ObjectIdentifier.init) == [ObjectIdentifier(b)])
            sessions.remove(a)
            #expect(sessions.count == 1)
            sessions.remove(b)
            #expect(sessions.isEmpty)
            sessions.append(c)
            #expect(sessions.isInline && sessions.count == 1)
            server.shutdown()
        }
    }

    @Test("a user online twice is listed twice, and once (inline) after one of them logs out")
    func serverUserSessions() async throws {
        try await onLoopThread {
            let server = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let (first, second) = (MemoryLinkPeer(), MemoryLinkPeer())
            server.adopt(first.serverEnd)
            server.adopt(second.serverEnd)
            #expect(first.logIn("ann")?.code == .ok)
            #expect(server.byUser["ann"]?.isInline == true)
            #expect(second.logIn("ann")?.code == .ok)
            #expect(server.byUser["ann"]?.count == 2 && server.byUser["ann"]?.isInline == false)
            second.send(IMFrame(command: .logout, serial: 2))
            #expect(server.byUser["ann"]?.count == 1 && server.byUser["ann"]?.isInline == true)
            first.send(IMFrame(command: .logout, serial: 2))
            #expect(server.byUser["ann"] == nil && server.onlineUsers.isEmpty)
            server.shutdown()
        }
    }

    @Test("a client instance online is forgotten when its session ends, but not when a session it replaced ends")
    func instancesOnline() async throws {
        try await onLoopThread {
            let server = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let (phone, laptop, newPhone) = (MemoryLinkPeer(), MemoryLinkPeer(), MemoryLinkPeer())
            for peer in [phone, laptop, newPhone] { server.adopt(peer.serverEnd) }
            logIn(phone, "bob", instance: "phone")
            logIn(laptop, "bob", instance: "laptop")
            let instancesOnline = { Set(server.sessions.filter { !$0.isEnded }.compactMap { $0.onlineInstance?.text }) }
            #expect(instancesOnline() == ["phone", "laptop"])
            let firstPhone = server.onlineSession(of: "bob", instance: ClientInstanceID("phone"))
            logIn(newPhone, "bob", instance: "phone")
            #expect(phone.received(.error).last?.code == .sessionReplaced)
            try #require(try spin(server.loop) { !phone.isOpen })
            let newSession = server.onlineSession(of: "bob", instance: ClientInstanceID("phone"))
            #expect(newSession != nil && newSession?.isEnded == false && newSession !== firstPhone, "the replaced session's end hid its successor")
            #expect(instancesOnline() == ["phone", "laptop"])
            laptop.send(IMFrame(command: .logout, serial: 2))
            newPhone.send(IMFrame(command: .logout, serial: 2))
            try #require(try spin(server.loop) { server.open.isEmpty })
            #expect(server.onlineSession(of: "bob", instance: ClientInstanceID("phone")) == nil)
            #expect(server.onlineSession(of: "bob", instance: ClientInstanceID("laptop")) == nil)
            server.shutdown()
        }
    }
    @Test("the ledger states a user's presence as last announced, in frames made when asked for, and pages name those online")
    func ledgerFrames() throws {
        var ledger = PresenceLedger()
        _ = ledger.note("ann")
        _ = ledger.note("bob")
        _ = ledger.settle { $0 == "ann" }
        #expect(ledger.frame(of: "ann") == PresenceLedger.frame("ann", online: true))
        #expect(ledger.frame(of: "bob") == PresenceLedger.frame("bob", online: false))
        let notice = try ledger.frame(of: "ann").decode(IMPresenceNotice.self)
        #expect(notice.user == "ann" && notice.online)
        #expect(ledger.snapshot(of: .everyone, for: "bob", limit: 5).users == ["ann"])
        #expect(ledger.page(of: ["bob", "ann"], from: 0, for: "bob", limit: 5).users == ["ann"])
        _ = ledger.note("ann")
        _ = ledger.settle { _ in false }
        #expect(ledger.frame(of: "ann") == PresenceLedger.frame("ann", online: false))
        #expect(ledger.snapshot(of: .everyone, for: "bob", limit: 5).users.isEmpty)
    }
}
