import ChatNodeKit
import Glibc
import RunLoopChat
import RunLoopChatCluster
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopRedis
import RunLoopTesting
import Testing

import class Foundation.Process

/// Chat nodes given a Redis as well as PostgreSQL: one cluster, in one process and as processes.
@Suite("Chat node in a cluster")
struct ClusterNodeTests {
    @Test(
        "two nodes on one database and Redis: a direct message from A reaches bob on B live, once; then each sees the other's presence; A's graceful stop does not announce her offline"
    )
    func messageAndPresenceAcrossNodes() async throws {
        let database = try await ChatPostgres.start()
        let redis = try RedisServer.start()
        try await onLoopThread {
            let loop = RunLoop.current
            let a = try ChatNode(configuration: clusterConfiguration(database, redis: redis))
            let b = try ChatNode(configuration: clusterConfiguration(database, redis: redis))
            defer {
                a.abort()
                b.abort()
            }
            #expect(a.configuration.nodeID != b.configuration.nodeID, "two nodes in one process get distinct ids")
            try a.start()
            try b.start()
            try #require(try spin(loop, for: .seconds(5)) { a.hasJoined && b.hasJoined })

            let bob = WatchingClient("bob", port: b.port)
            try #require(try spin(loop, for: .seconds(5)) { bob.chat.connection.state == .online })
            let alice = ChatClient(connection: client("alice", port: a.port))
            alice.connection.start()
            try #require(try spin(loop, for: .seconds(5)) { alice.connection.state == .online })

            _ = try alice.send("across the cluster", to: .user("bob"))
            try #require(try spin(loop, for: .seconds(5)) { !bob.received.isEmpty }, "delivered live, without a new login")
            try #require(try spin(loop, for: .seconds(5)) { bob.seen["alice"] == true }, "their first message: alice's presence on B")
            try loop.run(.default, timeout: .milliseconds(200))
            #expect(bob.received == ["across the cluster"])

            // A stopping node's users are moving, not gone: B waits the stop grace (30 s) for them.
            try completion(of: loop) { done in a.stop { done(()) } }
            #expect(try !spin(loop, for: .seconds(1)) { bob.seen["alice"] == false }, "A stopped: alice not announced offline")
            bob.chat.connection.close()
            try b.stopGracefully()
        }
    }

    @Test("a node with a Redis but a SQLite file is refused: a cluster shares its store")
    func clusterNeedsPostgres() async throws {
        try await onLoopThread {
            var configuration = ChatNode.Configuration(databasePath: temporaryPath("cluster") + ".db")
            configuration.redis = .unixSocket("/nonexistent/redis.sock")
            #expect(throws: ChatNodeError.clusterNeedsPostgres) { try ChatNode(configuration: configuration) }
        }
    }

    @Test("two `chat-node serve --postgres --redis` processes: a message across them arrives live; SIGTERM stops both cleanly")
    func twoProcesses() async throws {
        let database = try await ChatPostgres.start()
        let redis = try RedisServer.start()
        let refused = try runCommand(["/usr/bin/timeout", "60", ChatNodeBinary.path, "serve", "--redis", "unix://\(redis.socketPath)", "--port", "0"])
        #expect(refused.status != 0 && refused.errorOutput.contains("--redis needs --postgres"), "\(refused)")

        let arguments = [
            "serve", "--postgres", database.url, "--redis", "unix://\(redis.socketPath)", "--port", "0", "--no-http", "--scrypt-cost", "4",
            "--log-level", "error"
        ]
        let nodeA = try ServerProcess(executable: ChatNodeBinary.path, arguments + ["--node-id", "a"])
        defer { nodeA.kill() }
        let nodeB = try ServerProcess(executable: ChatNodeBinary.path, arguments + ["--node-id", "b"])
        defer { nodeB.kill() }
        let (portA, portB) = (nodeA.port, nodeB.port)
        let received = try await onLoopThread {
            let loop = RunLoop.current
            let bob = WatchingClient("bob", port: portB)
            try #require(try spin(loop, for: .seconds(5)) { bob.chat.connection.state == .online })
            let alice = ChatClient(connection: client("alice", port: portA))
            alice.connection.start()
            try #require(try spin(loop, for: .seconds(5)) { alice.connection.state == .online })
            // A direct conversation (alice's account exists now): bob sees her presence (docs/PROTOCOL.md §8).
            _ = try bob.chat.send("hello alice", to: .user("alice"))
            // Announced over the bus: B reads it, so what A publishes next reaches bob live.
            try #require(try spin(loop, for: .seconds(5)) { bob.seen["alice"] == true })
            _ = try alice.send("from process A", to: .user("bob"))
            try spin(loop, for: .seconds(5)) { !bob.received.isEmpty }
            try loop.run(.default, timeout: .milliseconds(200))
            alice.connection.close()
            bob.chat.connection.close()
            return bob.received
        }
        #expect(received == ["from process A"])
        nodeA.signal(SIGTERM)
        nodeB.signal(SIGTERM)
        #expect(nodeA.exit == .exited(0))
        #expect(nodeB.exit == .exited(0))
    }
}

/// A started client that keeps the texts it receives and whom it was told is online.
private final class WatchingClient {
    let chat: ChatClient
    private(set) var received: [String] = []
    private(set) var seen: [String: Bool] = [:]

    init(_ user: String, port: UInt16) {
        chat = ChatClient(connection: client(user, port: port))
        chat.onMessage = { [weak self] _, message in self?.received.append(message.text) }
        chat.onPresence = { [weak self] _, change in self?.seen[change.user] = change.isOnline }
        chat.connection.start()
    }
}

/// A test node on `database` that joins the cluster on `redis`.
private func clusterConfiguration(_ database: ChatPostgres, redis: RedisServer) -> ChatNode.Configuration {
    var configuration = nodeConfiguration(database)
    configuration.redis = .unixSocket(redis.socketPath)
    return configuration
}

extension ChatNode {
    /// Whether it holds its cluster lease and reads the bus: what others publish from now on reaches it.
    fileprivate var hasJoined: Bool {
        guard let cluster, case .held = cluster.presence.leaseState else { return false }
        return cluster.bus.isReading
    }
}
