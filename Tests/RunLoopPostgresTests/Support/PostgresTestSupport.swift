import RunLoopKit
import RunLoopNet
import RunLoopPostgres
import RunLoopTesting

extension PostgresConfiguration {
    /// The test server's socket, as its superuser.
    init(server: PostgresServer, connectTimeout: Duration? = .seconds(30), queryTimeout: Duration? = nil) {
        self.init(
            host: server.socketDirectory, port: server.port, user: server.user, database: server.database,
            connectTimeout: connectTimeout, queryTimeout: queryTimeout)
    }
}

/// Everything a test wants to know about one query or transaction: how often it completed, and with what.
final class Outcome<Value> {
    private(set) var results: [Result<Value, PostgresError>] = []
    var isDone: Bool { !results.isEmpty }
    var value: Value? { if case .success(let value) = results.first { value } else { nil } }
    var error: PostgresError? { if case .failure(let error) = results.first { error } else { nil } }
    func record(_ result: Result<Value, PostgresError>) { results.append(result) }
}

extension PostgresConnection {
    /// Queues `sql` and returns where its outcome lands.
    func outcome(_ sql: String, _ parameters: [String?] = []) -> Outcome<PostgresRows> {
        let outcome = Outcome<PostgresRows>()
        query(sql, parameters) { outcome.record($0) }
        return outcome
    }

    func transactionOutcome(_ statements: [PostgresStatement]) -> Outcome<[PostgresRows]> {
        let outcome = Outcome<[PostgresRows]>()
        transaction(statements) { outcome.record($0) }
        return outcome
    }
}

/// A connection to `server` on the current loop, ready for queries.
func connect(to server: PostgresServer, connectTimeout: Duration? = .seconds(30), queryTimeout: Duration? = nil) throws -> PostgresConnection {
    let loop = RunLoop.current
    let configuration = PostgresConfiguration(server: server, connectTimeout: connectTimeout, queryTimeout: queryTimeout)
    let connection = PostgresConnection(loop: loop, configuration: configuration)
    connection.connect()
    try spin(loop) { connection.state != .connecting }
    if connection.state != .ready { throw ConnectFailure(reason: connection.closeReason, log: server.log) }
    return connection
}

struct ConnectFailure: Error, CustomStringConvertible {
    let reason: PostgresError?
    let log: String
    var description: String { "could not connect to the test server: \(reason.map { "\($0)" } ?? "no reason")\n\(log)" }
}

/// Runs `sql` on `connection` and waits for its rows (throws its error).
@discardableResult
func run(_ connection: PostgresConnection, _ sql: String, _ parameters: [String?] = []) throws -> PostgresRows {
    let outcome = connection.outcome(sql, parameters)
    try spin(connection.loop) { outcome.isDone }
    return try outcome.results.first!.get()
}

extension Result {
    /// The error, if it failed.
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
