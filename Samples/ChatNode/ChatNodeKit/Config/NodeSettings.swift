public import Logging
import RunLoopChat
import RunLoopChatCluster
import RunLoopIMCore
import RunLoopKit
public import RunLoopTLS

/// Everything an operator sets on `chat-node serve`, whichever of the config file, the environment
/// or a flag set it (``NodeSettingKey`` names each one once for all three). Defaults are `serve`'s.
///
/// A value: build it, compare it (``ConfigReload``), turn it into a node's configuration; any thread.
public struct NodeSettings: Equatable, Sendable {
    /// How log lines are written (`log-format`).
    public enum LogFormat: String, Sendable, CaseIterable {
        /// swift-log's stream handler: one readable line per record.
        case text
        /// One JSON object per line (``JSONLogHandler``), for log collectors.
        case json
    }

    public var host = "127.0.0.1"
    public var port: UInt16 = 7100
    public var httpPort: UInt16 = 7101
    /// The browser page and its WebSocket; `false` is `--no-http`.
    public var http = true
    public var webSocketPingSeconds = 20.0
    /// SQLite file; `nil` with no PostgreSQL either means `chat-node.db`.
    public var database: String?
    public var postgres: String?
    public var redis: String?
    public var nodeID: String?
    public var leaseSeconds: Double?
    public var registration = true
    public var maximumConnections = 1024
    public var maximumSessionsPerUser = 4
    public var messagesPerSecond = 50.0
    /// 0: no limit.
    public var maximumRoomsPerUser = 100
    /// Members past which a room is large (`large-room-members`, docs/PROTOCOL.md §8): no MEMBERSHIP
    /// notices and no presence through it. Tests and demos set a small one.
    public var largeRoomMembers = ChatService.Settings().largeRoomMembers
    public var maximumFrameBytes = 64 * 1024
    public var loginSeconds = 10
    public var scryptCost = 14
    /// Days of history kept (`keep-days`); `nil`: all of it.
    public var keepDays: Int?
    public var logLevel = Logger.Level.info
    public var logFormat = LogFormat.text
    public var tlsCertificate: String?
    public var tlsKey: String?

    public init() {}

    /// Rules between settings, which no single key can check: each problem in words.
    public func inconsistencies() -> [String] {
        var problems: [String] = []
        if database != nil, postgres != nil { problems.append("database and postgres both set: use one store") }
        if redis != nil, postgres == nil { problems.append(ChatNodeError.clusterNeedsPostgres.description) }
        do {
            _ = try nodeConfiguration()
        } catch {
            problems.append("\(error)")
        }
        if (tlsCertificate == nil) != (tlsKey == nil) { problems.append("tls-cert and tls-key go together") }
        return problems
    }

    /// Where the node keeps its data.
    /// - Throws: a PostgreSQL address that cannot be read, in libpq's words.
    public func storage() throws(StoreURLError) -> ChatNodeStorage {
        guard let postgres else { return .sqlite(path: database ?? "chat-node.db") }
        return .postgres(try PostgresURL.parse(postgres))
    }

    /// The node these settings describe, but for its TLS context, which `serve` loads from
    /// ``tlsCertificate`` and ``tlsKey`` itself (so the files are read once, where failures are told).
    /// - Throws: a PostgreSQL or Redis address that cannot be read.
    public func nodeConfiguration() throws(StoreURLError) -> ChatNode.Configuration {
        var configuration = ChatNode.Configuration(storage: try storage())
        configuration.redis = try redis.map { url throws(StoreURLError) in try RedisURL.parse(url) }
        if let nodeID { configuration.nodeID = nodeID }
        if let leaseSeconds { configuration.lease = NodeLeasePolicy(ttl: .milliseconds(Int64(leaseSeconds * 1000))) }
        configuration.host = host
        configuration.port = port
        configuration.httpPort = http ? httpPort : nil
        configuration.webSocketPingInterval = .milliseconds(Int64(webSocketPingSeconds * 1000))
        configuration.registersOnFirstLogin = registration
        configuration.passwordHasher = PasswordHasher(rounds: 1 << scryptCost)
        configuration.largeRoomMembers = largeRoomMembers
        configuration.retention = keepDays.map { HistoryRetentionPolicy(keep: .seconds(86_400 * $0)) }
        applyLimits(to: &configuration)
        return configuration
    }

    /// The settings a reload may change in a running node (``ConfigReload``), written into `configuration`.
    public func applyLimits(to configuration: inout ChatNode.Configuration) {
        configuration.maximumConnections = maximumConnections
        configuration.maximumSessionsPerUser = maximumSessionsPerUser
        configuration.session.maximumMessagesPerSecond = messagesPerSecond
        configuration.maximumFrameBody = maximumFrameBytes
        configuration.maximumRoomsPerUser = maximumRoomsPerUser > 0 ? maximumRoomsPerUser : nil
        configuration.session.loginTimeout = .seconds(loginSeconds)
    }
}

extension NodeSettings {
    /// Both ports' TLS identity (IM, and HTTPS with `wss://`), loaded from ``tlsCertificate`` and ``tlsKey`` now (at start, and
    /// again on every reload, so a certificate renewed in place is picked up); `nil` without them.
    /// - Throws: the file that cannot be used and why.
    public func tlsContext() throws(TLSConfigurationError) -> ChatNodeTLS? {
        guard let tlsCertificate, let tlsKey else { return nil }
        return try ChatNodeTLS(certificateChainFile: tlsCertificate, privateKeyFile: tlsKey)
    }
}
