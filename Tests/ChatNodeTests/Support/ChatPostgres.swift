import ChatNodeKit
import RunLoopChat
import RunLoopChatPostgres
import RunLoopKit
import RunLoopNet
import RunLoopPostgres
import RunLoopTesting

/// One test's PostgreSQL for a node: a throw-away server, with the chat schema unless asked not to.
struct ChatPostgres: Sendable {
    let server: PostgresServer

    static func start(migrated: Bool = true) async throws -> ChatPostgres {
        let database = ChatPostgres(server: try await PostgresServer.start())
        if migrated {
            let outcome = try await onLoopThread { try database.migrate().get() }
            guard outcome.to == ChatSchema.version else { throw NodeTestFailure("migrated to \(outcome)") }
        }
        return database
    }

    /// The superuser over the socket, as `chat-node --postgres` takes it.
    var url: String { server.url }

    /// The superuser over the socket; commits synchronous, so a confirmed commit outlives a stop.
    var configuration: PostgresConfiguration {
        PostgresConfiguration(
            host: server.socketDirectory, port: server.port, user: server.user, database: server.database,
            options: ["options": "-c synchronous_commit=on"], connectTimeout: .seconds(30))
    }

    /// `chat-node migrate`'s work, on the current loop.
    func migrate() throws -> Result<ChatNodeMigration.Outcome, ChatSchemaError> {
        try completion(of: RunLoop.current) { ChatNodeMigration.migrate(postgres: configuration, completion: $0) }
    }

    /// One statement on a connection of its own; its rows.
    @discardableResult
    func execute(_ sql: String) throws -> PostgresRows {
        let loop = RunLoop.current
        let connection = PostgresConnection(loop: loop, configuration: configuration)
        defer { connection.close() }
        connection.connect()
        try spin(loop) { connection.state != .connecting }
        return try completion(of: loop) { connection.query(sql, completion: $0) }.get()
    }
}

/// A test node on `database`: fast password hashes, a short grace, quick reconnects to PostgreSQL.
func nodeConfiguration(_ database: ChatPostgres, port: UInt16 = 0) -> ChatNode.Configuration {
    var configuration = ChatNode.Configuration(storage: .postgres(database.configuration))
    configuration.port = port
    configuration.passwordHasher = .forTests
    configuration.shutdownGrace = .seconds(2)
    configuration.postgresReconnect = ReconnectingLinkPolicy(
        backoff: ReconnectBackoff.Policy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200)))
    return configuration
}

/// Starts an operation that completes through a callback on `loop`, runs the loop until it has
/// (once), and returns what it completed with.
func completion<Value>(of loop: RunLoop, _ operation: (@escaping (Value) -> Void) -> Void) throws -> Value {
    var values: [Value] = []
    operation { values.append($0) }
    try spin(loop) { !values.isEmpty }
    guard values.count == 1, let value = values.first else { throw NodeTestFailure("completed \(values.count) times") }
    return value
}

extension ChatNode {
    /// ``stop(_:)``, run on the loop until it is done.
    func stopGracefully() throws {
        try completion(of: loop) { done in stop { done(()) } }
    }
}

struct NodeTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
