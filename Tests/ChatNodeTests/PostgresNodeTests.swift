import ChatNodeKit
import RunLoopChat
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopPostgres
import RunLoopTesting
import Testing

/// A node on PostgreSQL: the same service as on SQLite, over a database that outlives the node and
/// may go away under it.
@Suite("Chat node on PostgreSQL")
struct PostgresNodeTests {
    @Test("two clients exchange a message; a node restarted on the same database keeps the history and delivers what was undelivered, once")
    func restartKeepsHistoryAndInbox() async throws {
        let database = try await ChatPostgres.start()
        try await onLoopThread {
            let loop = RunLoop.current
            let node = try ChatNode(configuration: nodeConfiguration(database))
            try node.start()
            let port = node.port
            let bob = client("bob", port: port)
            var received: [String] = []
            bob.onMessage = { _, message in received.append(message.text) }
            bob.start()
            try #require(try spin(loop) { bob.state == .online }, "first login made the account")
            let alice = client("alice", port: port)
            var stored = 0
            alice.onDelivery = { _, _, state in if case .stored = state { stored += 1 } }
            alice.start()
            try alice.send("hello", to: .user("bob"))
            try #require(try spin(loop) { received == ["hello"] })
            bob.close()
            try spin(loop) { bob.state == .closed(.userClosed) }
            try alice.send("while you were away", to: .user("bob"))
            try #require(try spin(loop) { stored == 2 })
            alice.close()
            try node.stopGracefully()

            // A port of its own: what is kept is the database. Taking the old port back lost a full
            // suite's race with another test's socket (address in use).
            let restarted = try ChatNode(configuration: nodeConfiguration(database))
            try restarted.start()
            received.removeAll()
            let bobAgain = client("bob", port: restarted.port)
            bobAgain.onMessage = bob.onMessage
            bobAgain.start()
            try #require(try spin(loop) { received == ["while you were away"] })
            try loop.run(.default, timeout: .milliseconds(100))
            #expect(received == ["while you were away"], "only the undelivered one comes")
            let store = try #require(restarted.postgres?.store)
            let page = try completion(of: loop) {
                store.history(HistoryQuery(conversation: .user("alice")), for: "bob", limit: 10, completion: $0)
            }.get()
            #expect(page.messages.map(\.text) == ["while you were away", "hello"], "history, newest first")
            bobAgain.close()
            restarted.stop()
        }
    }

    @Test(
        "PostgreSQL stopped under a running node: the SEND is refused as temporary and resent; after the restart it is stored once and delivered once"
    )
    func sendWhileDatabaseIsDown() async throws {
        let database = try await ChatPostgres.start()
        let rows = try await onLoopThread {
            let loop = RunLoop.current
            let node = try ChatNode(configuration: nodeConfiguration(database))
            try node.start()
            defer { node.abort() }
            let bob = client("bob", port: node.port)
            var received: [String] = []
            bob.onMessage = { _, message in received.append(message.text) }
            bob.start()
            // Resent after half a second rather than the default 15 s, and as often as it takes.
            var resending = clientConfiguration("alice")
            resending.ackTimeout = .milliseconds(500)
            resending.maximumSendAttempts = 1_000
            let alice = IMClient(configuration: resending, connector: TCPFrameLink.connector(host: "127.0.0.1", port: node.port))
            var states: [IMDeliveryState] = []
            alice.onDelivery = { _, _, state in states.append(state) }
            alice.start()
            try #require(try spin(loop) { bob.state == .online && alice.state == .online })

            database.server.stop()
            let link = try #require(node.postgres?.link)
            try #require(try spin(loop) { link.connection == nil })
            try alice.send("during the outage", to: .user("bob"))
            try #require(try spin(loop) { states.contains(.sent(attempt: 2)) }, "refused as temporary, sent again: \(states)")
            #expect(!states.contains { if case .stored = $0 { return true } else { return false } })
            try database.server.restart()
            try #require(try spin(loop) { received == ["during the outage"] }, "\(states)")
            #expect(states.last.map { if case .stored = $0 { return true } else { return false } } == true)
            try loop.run(.default, timeout: .milliseconds(100))
            #expect(received == ["during the outage"], "shown once")
            alice.close()
            bob.close()
            return try database.execute("SELECT count(*) FROM messages WHERE text = 'during the outage'").int(0, 0)
        }
        #expect(rows == 1, "stored once")
    }

    @Test("a node starts while PostgreSQL is down, and serves once it is up")
    func startsWhileDatabaseIsDown() async throws {
        let database = try await ChatPostgres.start()
        database.server.stop()
        try await onLoopThread {
            let loop = RunLoop.current
            let node = try ChatNode(configuration: nodeConfiguration(database))
            let ready = try completion(of: loop, node.connectStorage)
            #expect(ready.failure == nil, "the node serves while PostgreSQL is down")
            try node.start()
            defer { node.abort() }
            try database.server.restart()
            let alice = client("alice", port: node.port)
            alice.start()
            try #require(try spin(loop) { alice.state == .online })
            alice.close()
        }
    }

    @Test("a node refuses a database without the schema (run chat-node migrate) and one with a newer schema, before it listens")
    func refusesIncompatibleSchemas() async throws {
        let database = try await ChatPostgres.start(migrated: false)
        try await onLoopThread {
            let loop = RunLoop.current
            let unmigrated = try ChatNode(configuration: nodeConfiguration(database))
            let refusal = try completion(of: loop, unmigrated.connectStorage)
            #expect(refusal.failure == .needsMigration(found: 0, required: ChatSchema.version))
            #expect(refusal.failure?.description.contains("chat-node migrate") == true)

            _ = try database.migrate().get()
            try database.execute("UPDATE schema_version SET version = \(ChatSchema.version + 1)")
            let tooOld = try ChatNode(configuration: nodeConfiguration(database))
            #expect(
                try completion(of: loop, tooOld.connectStorage).failure == .newerThanKnown(found: ChatSchema.version + 1, known: ChatSchema.version))

            // Started without asking first, it stops itself when the connection finds the schema.
            let started = try ChatNode(configuration: nodeConfiguration(database))
            var refused: [ChatSchemaError] = []
            started.onStorageRefused = { refused.append($0) }
            try started.start()
            try #require(try spin(loop) { !refused.isEmpty })
            #expect(refused == [.newerThanKnown(found: ChatSchema.version + 1, known: ChatSchema.version)])
        }
    }

    @Test("accounts live in PostgreSQL: added by the node, checked at login in any case, wrong passwords refused, listed, disabled, removed")
    func accounts() async throws {
        let database = try await ChatPostgres.start()
        try await onLoopThread {
            let loop = RunLoop.current
            var configuration = nodeConfiguration(database)
            configuration.registersOnFirstLogin = false
            let node = try ChatNode(configuration: configuration)
            try node.start()
            defer { node.abort() }
            try #require(try spin(loop) { node.postgres?.link.connection != nil })
            #expect(try completion(of: loop) { node.addAccount(user: "Carol", password: "pw", completion: $0) }.get())
            #expect(try !completion(of: loop) { node.addAccount(user: "CAROL", password: "other", completion: $0) }.get())
            #expect(throws: ChatNodeError.asynchronousStorage) { try node.addAccount(user: "dave", password: "pw") }
            #expect(try completion(of: loop, node.accountNames).get() == ["carol"])

            let carol = client("CAROL", port: node.port)
            carol.start()
            try #require(try spin(loop) { carol.state == .online })
            let refused = IMConnectionState.closed(.loginRefused(.authenticationFailed, "unknown user or wrong password"))
            for (user, password) in [("carol", "guess"), ("stranger", "pw")] {
                let attempt = client(user, password: password, port: node.port)
                attempt.start()
                try spin(loop) { if case .closed = attempt.state { true } else { false } }
                #expect(attempt.state == refused, "\(user)")
            }
            carol.close()

            // Disabled: the right password is told so, and no first login makes the account again.
            #expect(try completion(of: loop) { node.setAccountDisabled(true, user: "CAROL", completion: $0) }.get() == .done(account: "carol"))
            let disabled = client("carol", port: node.port)
            disabled.start()
            try spin(loop) { if case .closed = disabled.state { true } else { false } }
            #expect(disabled.state == .closed(.loginRefused(.authenticationFailed, "account disabled")))
            #expect(try completion(of: loop) { node.removeAccount(user: "carol", completion: $0) }.get() == .done(account: "carol"))
            #expect(try completion(of: loop, node.accountNames).get().isEmpty)
        }
    }
}

extension Result {
    var failure: Failure? {
        guard case .failure(let failure) = self else { return nil }
        return failure
    }
}
