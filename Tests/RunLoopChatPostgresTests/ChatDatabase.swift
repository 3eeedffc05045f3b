import Logging
import RunLoopChatPostgres
import RunLoopKit
import RunLoopNet
import RunLoopPostgres
import RunLoopTesting

/// One test's chat database: a throw-away PostgreSQL server, with the chat schema unless asked not to.
struct ChatDatabase: Sendable {
    let server: PostgresServer

    static func start(migrated: Bool = true) async throws -> ChatDatabase {
        let database = ChatDatabase(server: try await PostgresServer.start())
        if migrated {
            try await onLoopThread {
                let connection = try database.connect()
                _ = try waitFor(connection.loop) { ChatSchema.migrate(on: connection, completion: $0) }.get()
            }
        }
        return database
    }

    /// The superuser over the socket. Commits are synchronous for these connections (the server's
    /// default is not, for speed): a commit a store confirmed outlives a killed server, as in production.
    var configuration: PostgresConfiguration {
        PostgresConfiguration(
            host: server.socketDirectory, port: server.port, user: server.user, database: server.database,
            options: ["options": "-c synchronous_commit=on"], connectTimeout: .seconds(30))
    }

    /// A connection on the current loop, ready for queries.
    func connect() throws -> PostgresConnection {
        let connection = PostgresConnection(configuration: configuration)
        connection.connect()
        try spin(connection.loop) { connection.state != .connecting }
        guard connection.state == .ready else { throw TestFailure("no connection: \(String(describing: connection.closeReason))\n\(server.log)") }
        return connection
    }

    /// A store on a connection of its own ("a node"), on the current loop, logging into `logs`.
    func store(authentication: PostgresChatStore.Authentication = .open, logs: CapturingLogHandler = CapturingLogHandler()) throws
        -> PostgresChatStore
    {
        PostgresChatStore(connection: try connect(), authentication: authentication, logger: Logger(label: "test") { _ in logs })
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Starts an operation that completes through a callback on `loop`, runs the loop until it has, and
/// returns what it completed with.
func waitFor<Value>(_ loop: RunLoop, _ operation: (@escaping (Value) -> Void) -> Void) throws -> Value {
    var value: Value?
    var completions = 0
    operation {
        value = $0
        completions += 1
    }
    try spin(loop) { completions > 0 }
    guard let value, completions == 1 else { throw TestFailure("completed \(completions) times") }
    return value
}

/// Runs one statement on `connection` and returns its rows.
@discardableResult
func execute(_ connection: PostgresConnection, _ sql: String, _ parameters: [String?] = []) throws -> PostgresRows {
    try waitFor(connection.loop) { connection.query(sql, parameters, completion: $0) }.get()
}
