import RunLoopChatCluster
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopRedis
import RunLoopTesting

/// A bus configuration for tests: a throw-away server's socket, short blocks and waits.
func busConfiguration(
    _ server: RedisServer, node: String, streamCount: Int = 4, maxLength: Int = 1_000, blockTimeout: Duration = .milliseconds(100),
    replyGrace: Duration = .seconds(2), publishTimeout: Duration = .seconds(2), maxPendingPublishes: Int = 1_000, deliversOwnEvents: Bool = false,
    reconnectDelay: Duration = .milliseconds(10)
) -> ClusterBusConfiguration {
    let backoff = ReconnectBackoff.Policy(initialDelay: reconnectDelay, maximumDelay: reconnectDelay * 5, jitter: 0)
    return ClusterBusConfiguration(
        nodeID: node, redis: .unixSocket(server.socketPath), keyspace: ClusterKeyspace(prefix: "test:"), streamCount: streamCount,
        maxLength: maxLength, blockTimeout: blockTimeout, readCount: 64, replyGrace: replyGrace, publishTimeout: publishTimeout,
        maxPendingPublishes: maxPendingPublishes, deliversOwnEvents: deliversOwnEvents,
        reconnect: ReconnectingLinkPolicy(backoff: backoff))
}

/// One bus, started, with what it reported.
final class BusNode {
    let bus: ClusterBus
    private(set) var events: [ClusterEvent] = []
    private(set) var origins: Set<String> = []
    private(set) var fellBehind: [[Int]] = []

    init(_ configuration: ClusterBusConfiguration) throws {
        bus = ClusterBus(configuration: configuration)
        bus.onReport = { [unowned self] report in
            switch report {
            case .event(let event, let origin):
                events.append(event)
                origins.insert(origin)
            case .fellBehind(let shards): fellBehind.append(shards)
            }
        }
        bus.start()
        try waitUntilUp()
    }

    deinit { bus.close() }

    func waitUntilUp() throws {
        try RunLoop.current.runUntil(timeout: .seconds(10)) { self.bus.isReading && self.bus.isPublishing }
    }

    /// The numbers of the messages reported, per conversation, in the order they came.
    var sequences: [IMConversation: [UInt64]] {
        var sequences: [IMConversation: [UInt64]] = [:]
        for case .message(let message, _) in events { sequences[message.conversation, default: []].append(message.conversationSeq) }
        return sequences
    }

    /// Publishes and runs the loop until Redis answered.
    func publishAndWait(_ events: [ClusterEvent]) throws {
        var answered = 0
        for event in events { bus.publish(event) { _ in answered += 1 } }
        try RunLoop.current.runUntil(timeout: .seconds(10)) { answered == events.count }
    }
}

/// A message of `room` numbered `number`.
func roomMessage(_ number: UInt64, in room: String, from sender: String = "ann") -> ClusterEvent {
    .message(
        IMMessage(
            id: "\(room)-\(number)", from: sender, recipient: .room(room), text: "#\(number)", seq: number, sentAtMilliseconds: 1,
            conversationSeq: number))
}

/// A plain connection of the test's own to the server, for setting it up and doing harm to it.
final class RedisProbe {
    private let connection: RedisConnection

    init(_ server: RedisServer) throws {
        connection = RedisConnection(configuration: .unixSocket(server.socketPath))
        connection.connect()
        try RunLoop.current.runUntil(timeout: .seconds(10)) { self.connection.state != .connecting }
    }

    deinit { connection.close() }

    /// A probe of `server` after it was told to keep stream entries in blocks of two, so that
    /// `MAXLEN ~ 4` trims at a few entries (Redis trims whole blocks only, 100 entries by default).
    static func trimmingEarly(_ server: RedisServer) throws -> RedisProbe {
        let probe = try RedisProbe(server)
        try probe.run(["CONFIG", "SET", "stream-node-max-entries", "2"])
        return probe
    }

    /// Sends `arguments` and runs the loop until the answer came.
    @discardableResult
    func run(_ arguments: [String]) throws -> RedisReply {
        var answer: Result<RedisReply, RedisError>?
        connection.send(arguments) { answer = $0 }
        try RunLoop.current.runUntil(timeout: .seconds(10)) { answer != nil }
        return try answer!.get()
    }

    /// Sends `arguments` without waiting for the answer (a `DEBUG SLEEP`).
    func start(_ arguments: [String]) { connection.send(arguments) { _ in } }

    /// An `INFO` field's value.
    func info(_ field: String) throws -> String? {
        try run(["INFO"]).string?.split(whereSeparator: \.isNewline).first { $0.hasPrefix(field + ":") }.map { String($0.dropFirst(field.count + 1)) }
    }

    /// The client id of `node`'s bus reader once it is blocked in `XREAD` (so whatever it sent before
    /// has been answered); `nil` if it does not block within the time.
    func blockedReader(of node: String) throws -> String? {
        for _ in 0..<1_000 {
            let clients = try run(["CLIENT", "LIST"]).string?.split(whereSeparator: \.isNewline) ?? []
            let fields = clients.map { Set($0.split(separator: " ").map(String.init)) }
            // `flags=bU`: blocked, on a unix socket.
            if let reader = fields.first(where: {
                $0.contains("name=test:bus-reader:\(node)") && $0.contains { $0.hasPrefix("flags=") && $0.contains("b") }
            }) {
                return reader.first { $0.hasPrefix("id=") }.map { String($0.dropFirst(3)) }
            }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(1))
        }
        return nil
    }
}
