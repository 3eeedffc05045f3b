import ChatNodeKit
import Glibc
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

import class Foundation.Process

func temporaryDatabase() -> String {
    "/tmp/chat-node-test-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).db"
}

/// A test node's settings: fast password hashes, a short grace; `httpPort` 0 serves the page and `/ws`.
func nodeConfiguration(_ path: String, port: UInt16 = 0, httpPort: UInt16? = nil) -> ChatNode.Configuration {
    var configuration = ChatNode.Configuration(databasePath: path)
    configuration.port = port
    configuration.httpPort = httpPort
    configuration.passwordHasher = .forTests
    configuration.shutdownGrace = .seconds(2)
    return configuration
}

/// Runs `body` with a node started on a temporary database on this loop's thread, then stops the node
/// and removes the database.
func withStartedNode(_ body: (ChatNode, RunLoop) throws -> Void) throws {
    let loop = RunLoop.current
    let path = temporaryDatabase()
    defer { removeDatabase(path) }
    let node = try ChatNode(configuration: nodeConfiguration(path))
    try node.start()
    defer {
        var stopped = false
        node.stop { stopped = true }
        _ = try? spin(loop) { stopped }
    }
    try body(node, loop)
}

/// A test client's settings: a 5 s heartbeat, quick reconnects.
func clientConfiguration(_ user: String, password: String = "pw", heartbeat: Duration = .seconds(5)) -> IMClientConfiguration {
    var configuration = IMClientConfiguration(user: user, password: password)
    configuration.heartbeat = .fixed(heartbeat)
    configuration.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(300))
    return configuration
}

func client(_ user: String, password: String = "pw", port: UInt16, heartbeat: Duration = .seconds(5)) -> IMClient {
    IMClient(
        configuration: clientConfiguration(user, password: password, heartbeat: heartbeat),
        connector: TCPFrameLink.connector(host: "127.0.0.1", port: port))
}

@Suite("Chat node")
struct ChatNodeTests {
    @Test("first login creates the account; the wrong password is refused clearly; without registration unknown names are refused")
    func accounts() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            var configuration = nodeConfiguration(path)
            let node = try ChatNode(configuration: configuration)
            try node.start()
            let alice = client("alice", password: "s3cret", port: node.port)
            alice.start()
            try #require(try spin(loop) { alice.state == .online })
            let accounts = try #require(node.sqliteAccounts)
            let hash = try #require(try accounts.passwordHash(of: "alice"))
            #expect(hash.hasPrefix("scrypt$") && !hash.contains("s3cret"))
            let impostor = client("alice", password: "guess", port: node.port)
            impostor.start()
            try #require(try spin(loop) { if case .closed = impostor.state { return true } else { return false } })
            #expect(impostor.state == .closed(.loginRefused(.authenticationFailed, "unknown user or wrong password")))
            let badName = client("no spaces please", port: node.port)
            badName.start()
            try #require(try spin(loop) { if case .closed = badName.state { return true } else { return false } })
            alice.close()
            var stopped = false
            node.stop { stopped = true }
            try #require(try spin(loop) { stopped })

            configuration.registersOnFirstLogin = false
            let closed = try ChatNode(configuration: configuration)
            try closed.start()
            let stranger = client("stranger", port: closed.port)
            stranger.start()
            try #require(try spin(loop) { if case .closed = stranger.state { return true } else { return false } })
            #expect(stranger.state == .closed(.loginRefused(.authenticationFailed, "unknown user or wrong password")))
            let returning = client("alice", password: "s3cret", port: closed.port)
            returning.start()
            try #require(try spin(loop) { returning.state == .online }, "accounts persist in the database")
            returning.close()
            closed.stop()
        }
    }

    @Test(
        "logins in progress are bounded per address: over the bound a login is refused for now (rateLimited) and retried, not closed for good; a finished check frees its place"
    )
    func pendingLoginBound() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            var configuration = nodeConfiguration(path)
            configuration.logins.pendingChecksPerAddress = 0
            let full = try ChatNode(configuration: configuration)
            try full.start()
            let refused = client("ann", port: full.port)
            var reasons: [IMDisconnectReason] = []
            refused.onDisconnect = { _, reason in reasons.append(reason) }
            refused.start()
            try #require(try spin(loop) { reasons.count >= 2 }, "refused, then tried again")
            #expect(reasons.allSatisfy { if case .loginRefused(.rateLimited, _) = $0 { return true } else { return false } }, "\(reasons)")
            #expect(refused.state != .closed(.loginRefused(.rateLimited, "too many logins in progress; try again shortly")))
            refused.close()
            full.stop()

            configuration.logins.pendingChecksPerAddress = 1
            let one = try ChatNode(configuration: configuration)
            try one.start()
            let clients = ["bea", "cy", "dot"].map { client($0, port: one.port) }
            for each in clients {
                each.start()
                try #require(try spin(loop) { each.state == .online }, "each check gives its place back")
            }
            for each in clients { each.close() }
            var stopped = false
            one.stop { stopped = true }
            try #require(try spin(loop) { stopped })
        }
    }

    @Test("offline delivery survives a node restart: kept until acknowledged, in order, exactly once")
    func offlineDeliveryAcrossRestart() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            let node = try ChatNode(configuration: nodeConfiguration(path))
            try node.start()
            let port = node.port
            let bob = client("bob", port: port)
            bob.start()
            try #require(try spin(loop) { bob.state == .online })
            bob.close()
            let alice = client("alice", port: port)
            var delivered = 0
            alice.onDelivery = { _, _, state in if case .stored = state { delivered += 1 } }
            alice.start()
            for index in 0..<10 { try alice.send("offline \(index)", to: .user("bob")) }
            try #require(try spin(loop) { delivered == 10 })
            #expect(alice.state == .online)
            var bounced = false
            do { _ = try alice.send("to nobody", to: .user("ghost")) }
            alice.onDelivery = { _, _, state in if case .failed(.refused(.unknownRecipient)) = state { bounced = true } }
            try #require(try spin(loop) { bounced }, "a DM to a user without an account is refused")
            alice.close()
            var stopped = false
            node.stop { stopped = true }
            try #require(try spin(loop) { stopped })

            // A port of its own: what is kept is the database (the old port can be another test's by now).
            let restarted = try ChatNode(configuration: nodeConfiguration(path))
            try restarted.start()
            let bobAgain = client("bob", port: restarted.port)
            var received: [String] = []
            bobAgain.onMessage = { _, message in received.append(message.text) }
            bobAgain.start()
            try #require(try spin(loop) { received.count == 10 })
            #expect(received == (0..<10).map { "offline \($0)" })
            try #require(try spin(loop) { (try? restarted.sqliteStore?.undelivered(for: "bob"))?.isEmpty == true }, "acknowledged, then forgotten")
            bobAgain.close()
            try spin(loop) { bobAgain.state == .closed(.userClosed) }
            let third = client("bob", port: restarted.port)
            var again = 0
            third.onMessage = { _, _ in again += 1 }
            third.start()
            try #require(try spin(loop) { third.state == .online })
            try loop.run(.default, timeout: .milliseconds(100))
            #expect(again == 0, "nothing comes twice")
            third.close()
            restarted.stop()
        }
    }

    @Test("a graceful stop tells clients, which reconnect with backoff to the next node on the same port")
    func gracefulStop() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            let node = try ChatNode(configuration: nodeConfiguration(path))
            try node.start()
            let port = node.port
            let alice = client("alice", port: port)
            var reasons: [IMDisconnectReason] = []
            alice.onDisconnect = { _, reason in reasons.append(reason) }
            alice.start()
            try #require(try spin(loop) { alice.state == .online })
            var stopped = false
            node.stop { stopped = true }
            try #require(try spin(loop) { stopped })
            #expect(reasons == [.serverError(.shuttingDown, "server shutting down")])
            let next = try ChatNode(configuration: nodeConfiguration(path, port: port))
            try next.start()
            try #require(try spin(loop) { alice.state == .online })
            alice.close()
            next.stop()
        }
    }
}

@Suite("chat-node serve, the process")
struct ServeProcessTests {
    @Test("serve raises the soft descriptor limit to the hard one: every client is a descriptor")
    func serveRaisesTheDescriptorLimit() throws {
        let hard = DescriptorLimit.current.hard
        guard hard > 256 else {
            print("skipped: the hard descriptor limit (\(hard)) leaves nothing to raise")
            return
        }
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let node = try ServerProcess(
            executable: ChatNodeBinary.path,
            [
                "serve", "--host", "127.0.0.1", "--port", "0", "--database", path,
                "--scrypt-cost", "4", "--log-level", "error", "--no-http"
            ],
            softDescriptorLimit: 256)
        defer { node.kill() }
        // "Max open files            <soft>               <hard>               files"
        let limits = try String(contentsOfFile: "/proc/\(node.process.processIdentifier)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let fields = line.split(separator: " ")
        try #require(fields.count >= 5)
        #expect(fields[3] == fields[4], "soft \(fields[3]) should have been raised to hard \(fields[4])")
        #expect(fields[3] != "256")
    }
}
