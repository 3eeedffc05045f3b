import RunLoopChatCluster
import RunLoopKit
import RunLoopRedis
import RunLoopTesting
import Testing

/// Leases short enough that a test sees lapses and reaps in well under a second, long enough that a
/// busy machine does not lose them by accident.
let shortLeases = NodeLeasePolicy(
    ttl: .milliseconds(400), refreshInterval: .milliseconds(100), retryInterval: .milliseconds(30), reapInterval: .milliseconds(200),
    commandTimeout: .milliseconds(300), reconnect: ReconnectBackoff.Policy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(60)))

/// How long a test waits for anything before it fails: a liveness bound, not a timing claim (timing is
/// the benchmark's). Three nodes, PostgreSQL and Redis share CI's two cores with Chromium and the chaos
/// suite's node processes: there the 3-node room test needed more than 10 s (3 s on a quiet machine).
let patience = Duration.seconds(30)

/// A node under test and everything it reported.
final class TestNode {
    let presence: NodePresence
    private(set) var events: [NodePresenceEvent] = []

    init(_ id: String, server: RedisServer, modes: [RunLoop.Mode] = [.common], policy: NodeLeasePolicy = shortLeases) {
        presence = NodePresence(nodeID: id, modes: modes, redis: .unixSocket(server.socketPath), policy: policy)
        presence.onEvent = { [unowned self] in events.append($0) }
    }

    var changes: [PresenceChange] { events.compactMap { if case .presence(let change) = $0 { change } else { nil } } }
    var online: [String] { changes.flatMap(\.online) }
    var offline: [String] { changes.flatMap(\.offline) }
    var leaseStates: [NodeLeaseState] { events.compactMap { if case .lease(let state) = $0 { state } else { nil } } }
    var epoch: UInt64? { if case .held(let epoch) = presence.leaseState { epoch } else { nil } }
    /// The nodes this one reaped.
    var reaped: [String] { changes.compactMap { if case .reaped(let node, _) = $0.cause { node } else { nil } } }
}

/// Starts `nodes` and runs `mode` until each holds its lease.
func join(_ nodes: [TestNode], in mode: RunLoop.Mode = .default) throws {
    for node in nodes { node.presence.start() }
    try #require(try RunLoop.current.runUntil(in: mode, timeout: patience) { nodes.allSatisfy { $0.epoch != nil } })
}

/// Opens a session of `user` on `node` and runs `mode` until it is answered.
@discardableResult
func open(_ user: String, on node: TestNode, limit: Int = 10, in mode: RunLoop.Mode = .default) throws -> SessionAdmission {
    var answer: SessionAdmission?
    node.presence.sessionOpened(user, limit: limit) { answer = $0 }
    try RunLoop.current.runUntil(in: mode, timeout: patience) { answer != nil }
    return try #require(answer)
}

/// A connection of the test's own to `server`, to look at the keys and to misbehave.
final class Observer {
    let connection: RedisConnection
    let keys = PresenceKeys()

    init(_ server: RedisServer) throws {
        connection = RedisConnection(configuration: .unixSocket(server.socketPath))
        connection.connect()
        try RunLoop.current.runUntil(timeout: patience) { self.connection.state != .connecting }
        try #require(connection.state == .ready)
    }

    deinit { connection.close() }

    /// Sends `command` and runs the loop until it is answered.
    func call(_ command: [String]) throws -> RedisReply {
        var result: Result<RedisReply, RedisError>?
        connection.send(command) { result = $0 }
        try RunLoop.current.runUntil(timeout: patience) { result != nil }
        return try #require(result).get()
    }

    /// Sends `command` without waiting for its answer (`DEBUG SLEEP`, which holds Redis up).
    func sendAndForget(_ command: [String]) { connection.send(command) { _ in } }

    /// A hash as a dictionary of strings.
    func hash(_ key: String) throws -> [String: String] {
        let flat = try call(["HGETALL", key]).array?.compactMap(\.string) ?? []
        return Dictionary(uniqueKeysWithValues: stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0], flat[$0 + 1]) })
    }

    /// The cluster-wide sessions per user.
    func totals() throws -> [String: String] { try hash(keys.totals) }

    /// Runs the loop until the totals are `expected`.
    func waitForTotals(_ expected: [String: String]) throws {
        var last: [String: String] = [:]
        let reached = try poll {
            last = try totals()
            return last == expected
        }
        #expect(reached, "totals \(last), expected \(expected)")
    }

    /// Runs the loop in short runs until `condition`, which may ask Redis, holds; it is asked between
    /// runs of the loop, never from inside one. Whether it held before ``patience`` ran out.
    func poll(_ condition: () throws -> Bool) throws -> Bool {
        let loop = RunLoop.current
        let deadline = loop.now + patience
        while try !condition() {
            guard loop.now < deadline else { return false }
            _ = try loop.run(.default, timeout: .milliseconds(20))
        }
        return true
    }
}

/// One test's cluster: a throw-away redis-server, the test's own connection to it, and nodes.
struct Cluster {
    let loop: RunLoop
    let server: RedisServer
    let observer: Observer
    let nodes: [TestNode]
}

/// Starts a redis-server and, on a loop thread of the test's own, nodes named `ids` that join it;
/// runs `body` with them and closes them after.
func withCluster(_ ids: [String], _ body: @escaping @Sendable (Cluster) throws -> Void) async throws {
    let server = try RedisServer.start()
    try await onLoopThread {
        let cluster = Cluster(loop: .current, server: server, observer: try Observer(server), nodes: ids.map { TestNode($0, server: server) })
        defer { for node in cluster.nodes { node.presence.close() } }
        try join(cluster.nodes)
        try body(cluster)
    }
}
