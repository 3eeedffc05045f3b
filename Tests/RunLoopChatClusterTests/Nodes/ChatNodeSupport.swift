import Logging
import RunLoopChat
import RunLoopChatCluster
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopNet
import RunLoopPostgres
import RunLoopRedis
import RunLoopTesting
import Testing

/// What chat nodes share: a throw-away PostgreSQL with the chat schema and a throw-away redis-server.
struct SharedServers: Sendable {
    let postgres: PostgresServer
    let redis: RedisServer

    static func start() async throws -> SharedServers {
        let servers = SharedServers(postgres: try await PostgresServer.start(), redis: try RedisServer.start())
        try await onLoopThread {
            let connection = PostgresConnection(configuration: servers.database)
            defer { connection.close() }
            connection.connect()
            var migrated: Result<ChatSchema.Migration, ChatSchemaError>?
            ChatSchema.migrate(on: connection) { migrated = $0 }
            try #require(try RunLoop.current.runUntil(timeout: patience) { migrated != nil })
            _ = try #require(migrated).get()
        }
        return servers
    }

    /// Commits are synchronous, as in production: one the store confirmed outlives a killed server.
    var database: PostgresConfiguration {
        PostgresConfiguration(
            host: postgres.socketDirectory, port: postgres.port, user: postgres.user, database: postgres.database,
            options: ["options": "-c synchronous_commit=on"], connectTimeout: .seconds(30))
    }
}

/// Retries short enough that a test sees a reconnect in well under a second.
let quickReconnect = ReconnectingLinkPolicy(backoff: ReconnectBackoff.Policy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100)))

/// One chat node on the test's loop: an `IMServer` with `ChatService` over its own PostgreSQL
/// connection, made a cluster node; clients reach it over in-memory links.
final class ChatNodeUnderTest {
    let id: String
    let server: IMServer
    let store: PostgresChatStore
    let database: ReconnectingLink<PostgresConnection>
    let cluster: ChatCluster
    let links: MemoryLinkConnector
    let logs = CapturingLogHandler()

    /// - Parameters:
    ///   - redisSocket: where the node reaches Redis, when not at the shared server's own socket (a
    ///     path the test makes and takes away).
    ///   - maximumUnpublished: the node's ``ChatCluster/Configuration/maximumUnpublished``.
    init(
        _ id: String, servers: SharedServers, maximumSessionsPerUser: Int? = nil, redisSocket: String? = nil, maximumUnpublished: Int? = nil
    ) {
        self.id = id
        let loop = RunLoop.current
        let configuration = servers.database
        database = ReconnectingLink(policy: quickReconnect) { PostgresConnection(loop: loop, configuration: configuration) }
        let logger = Logger(label: "node \(id)") { [logs] _ in logs }
        store = PostgresChatStore(link: database, authentication: .open, logger: logger)
        var settings = IMServer.Settings()
        settings.maximumSessionsPerUser = maximumSessionsPerUser
        server = IMServer(store: store, settings: settings, logger: logger)
        server.applicationHandler = ChatService()
        var clusterConfiguration = ChatCluster.Configuration(
            nodeID: id, redis: .unixSocket(redisSocket ?? servers.redis.socketPath), lease: shortLeases)
        clusterConfiguration.bus.blockTimeout = .milliseconds(200)
        clusterConfiguration.bus.replyGrace = .milliseconds(500)
        clusterConfiguration.bus.publishTimeout = .milliseconds(300)
        clusterConfiguration.bus.reconnect = quickReconnect
        clusterConfiguration.sequencer = ConversationSequencer.Configuration(gapDeadline: .milliseconds(200))
        clusterConfiguration.stopGrace = .milliseconds(600)
        if let maximumUnpublished { clusterConfiguration.maximumUnpublished = maximumUnpublished }
        cluster = ChatCluster(server: server, configuration: clusterConfiguration, logger: logger)
        links = MemoryLinkConnector(server: server)
        database.start()
        cluster.start()
    }

    /// Prints what the node logged at debug and above, for a failed test's output.
    func printLog() {
        for record in logs.records.get() where record.level >= .debug {
            print("node \(id) [\(record.level)] \(record.message) \(record.metadata.isEmpty ? "" : "\(record.metadata)")")
        }
    }

    /// Whether its database connection is up, its lease held and its bus reading.
    var isReady: Bool {
        database.connection != nil && cluster.bus.isReading && cluster.bus.isPublishing
            && { if case .held = cluster.presence.leaseState { true } else { false } }()
    }

    /// A client of `user` on this node, started.
    func client(_ user: String) -> TestClient {
        var configuration = IMClientConfiguration(user: user, password: "pw")
        configuration.ackTimeout = .milliseconds(300)
        configuration.maximumSendAttempts = 1_000
        configuration.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100))
        return TestClient(IMClient(configuration: configuration, connector: links.connector))
    }

    /// A client of `user` on this node, online and a member of `room` (so in the presence audience of
    /// the room's other members).
    func member(_ user: String, of room: String) throws -> TestClient {
        let client = client(user)
        try wait("\(user) online") { client.isOnline }
        try client.join(room)
        return client
    }

    /// Stopped gracefully, as `chat-node` stops: the server shuts down, then the node leaves.
    func stop() throws {
        var stopped = false
        server.shutdown { [cluster] in cluster.leave { stopped = true } }
        try wait("node \(id) stopped") { stopped }
        database.close()
    }

    /// Gone as if killed: sessions reset, nothing said to Redis (its lease lapses), connections closed.
    func kill() {
        server.abort()
        cluster.close()
        database.close()
    }
}

/// A chat client and all it saw.
final class TestClient {
    let chat: ChatClient
    private(set) var received: [ChatMessage] = []
    private(set) var presence: [String: Bool] = [:]
    private(set) var outcomes: [String: IMDeliveryState] = [:]
    private(set) var disconnects: [IMDisconnectReason] = []
    private(set) var membership: [MembershipChange] = []

    init(_ connection: IMClient) {
        chat = ChatClient(connection: connection)
        chat.onMessage = { [weak self] _, message in self?.received.append(message) }
        chat.onPresence = { [weak self] _, change in self?.presence[change.user] = change.isOnline }
        chat.onDelivery = { [weak self] _, id, state in self?.outcomes[id] = state }
        chat.onMembership = { [weak self] _, change in self?.membership.append(change) }
        connection.onDisconnect = { [weak self] _, reason in self?.disconnects.append(reason) }
        connection.start()
    }

    var isOnline: Bool { chat.connection.state == .online }

    /// The texts received, in order.
    var texts: [String] { received.map(\.text) }

    /// Sends `text`; its id.
    @discardableResult
    func send(_ text: String, to recipient: Recipient, id: String? = nil) throws -> String { try chat.send(text, to: recipient, id: id) }

    /// Whether the message `id` was stored (SEND_ACK ok).
    func isStored(_ id: String) -> Bool { if case .stored = outcomes[id] { true } else { false } }

    /// Joins `room` and runs the loop until the answer.
    func join(_ room: String) throws { try answered(chat.join(room:completion:), room) }

    /// Leaves `room` and runs the loop until the answer.
    func leave(_ room: String) throws { try answered(chat.leave(room:completion:), room) }

    private func answered(_ request: (String, @escaping (Result<Room, ChatRequestError>) -> Void) -> Void, _ room: String) throws {
        var answer: Result<Room, ChatRequestError>?
        request(room) { answer = $0 }
        try #require(try RunLoop.current.runUntil(timeout: patience) { answer != nil })
        _ = try #require(answer).get()
    }
}

/// Starts the shared servers and, on a loop thread of the test's own, nodes named `ids`; runs `body`
/// once every node is ready, and stops the nodes after.
func withNodes(
    _ ids: [String], maximumSessionsPerUser: Int? = nil, _ body: @escaping @Sendable (SharedServers, [ChatNodeUnderTest]) throws -> Void
) async throws {
    let servers = try await SharedServers.start()
    try await onLoopThread {
        let nodes = ids.map { ChatNodeUnderTest($0, servers: servers, maximumSessionsPerUser: maximumSessionsPerUser) }
        defer {
            for node in nodes { node.kill() }
            _ = try? RunLoop.current.run(.default, timeout: .milliseconds(50))
        }
        do {
            try #require(try RunLoop.current.runUntil(timeout: patience) { nodes.allSatisfy(\.isReady) })
            try body(servers, nodes)
        } catch {
            // A test that gave up waiting shows what each node said (its logs are otherwise only captured).
            for node in nodes { node.printLog() }
            throw error
        }
    }
}

/// Runs the loop until `condition` holds; fails the test (with `what`) when it does not in time.
func wait(_ what: String, _ condition: @escaping () -> Bool) throws {
    try #require(try RunLoop.current.runUntil(timeout: patience, condition), "\(what)")
}
