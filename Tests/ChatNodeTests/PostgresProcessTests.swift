import Glibc
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

import class Foundation.Process

/// `chat-node migrate`, `account` and `serve` against PostgreSQL, as processes.
@Suite("chat-node on PostgreSQL, the process")
struct PostgresProcessTests {
    @Test("serve refuses an unmigrated database; migrate creates the schema, then has nothing to do; account add and list work on it")
    func migrateAndAccounts() async throws {
        let database = try await ChatPostgres.start(migrated: false)
        let node = ChatNodeBinary.path
        // `timeout`: a serve that wrongly started would otherwise hold the test for ever.
        let refused = try runCommand(["/usr/bin/timeout", "60", node, "serve", "--postgres", database.url, "--port", "0", "--no-http"])
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.errorOutput.contains("run `chat-node migrate`"), "\(refused.errorOutput)")
        #expect(!refused.output.contains("listening on"))

        let first = try runCommand([node, "migrate", "--postgres", database.url, "--log-level", "error"])
        #expect(first.status == 0, "\(first.errorOutput)")
        #expect(first.output.contains("schema version 0 → \(ChatSchema.version)"), "\(first.output)")
        let second = try runCommand([node, "migrate", "--postgres", database.url, "--log-level", "error"])
        #expect(second.output.contains("nothing to do"), "\(second.output)")

        let add = try runCommand([
            "/bin/sh", "-c", "echo pw | \"$0\" account add --postgres \"$1\" --user Carol --log-level error", node, database.url
        ])
        #expect(add.status == 0 && add.output == "created Carol\n", "\(add)")
        let list = try runCommand(["/bin/sh", "-c", "CHAT_NODE_POSTGRES=\"$1\" \"$0\" account list --log-level error", node, database.url])
        #expect(list.output == "carol\n", "\(list)")
    }

    @Test("serve with CHAT_NODE_POSTGRES prints listening on, two clients exchange a message, SIGTERM stops it cleanly")
    func serve() async throws {
        let database = try await ChatPostgres.start()
        let node = try ServerProcess(
            executable: "/bin/sh",
            [
                "-c", "CHAT_NODE_POSTGRES=\"$1\" exec \"$0\" serve --port 0 --no-http --scrypt-cost 4 --log-level error",
                ChatNodeBinary.path, database.url
            ])
        defer { node.kill() }
        let port = node.port
        let received = try await onLoopThread {
            let loop = RunLoop.current
            let bob = client("bob", port: port)
            var received: [String] = []
            bob.onMessage = { _, message in received.append(message.text) }
            bob.start()
            try #require(try spin(loop) { bob.state == .online })
            let alice = client("alice", port: port)
            alice.start()
            try alice.send("over PostgreSQL", to: .user("bob"))
            try spin(loop) { !received.isEmpty }
            alice.close()
            bob.close()
            return received
        }
        #expect(received == ["over PostgreSQL"])
        node.signal(SIGTERM)
        #expect(node.exit == .exited(0))
        let stored = try await onLoopThread { try database.execute("SELECT count(*) FROM messages").int(0, 0) }
        #expect(stored == 1)
    }
}
