/// Why a query, a transaction or a connection failed. Every pending completion gets exactly one
/// result: its rows, or one of these.
public enum PostgresError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The connection could not be made: the name did not resolve, the server refused or was not
    /// there, authentication failed. Carries libpq's message (or the resolver's).
    case connectionFailed(String)
    /// The server refused the statement (constraint violation, syntax error, …). Only that query or
    /// transaction fails; the connection carries on.
    case server(PostgresServerError)
    /// The connection ended before the statement's outcome arrived: the server went away, the socket
    /// was reset, or the query timeout closed it. A statement that was never sent did not run. One
    /// that was sent outside a transaction may have run, and a change it made may have committed:
    /// when that matters, use ``PostgresConnection/transaction(_:completion:)``, whose uncertain
    /// case is ``commitOutcomeUnknown(_:)``.
    case connectionLost(String)
    /// The connection ended after a transaction's COMMIT was sent and before its answer arrived: the
    /// transaction may or may not have committed. Neither acknowledge nor refuse what it stored; find
    /// out by reading, or make the retry idempotent.
    case commitOutcomeUnknown(String)
    /// A deadline on the loop's clock passed: connecting took longer than the connect timeout, or the
    /// server stayed silent longer than the query timeout while results were awaited.
    case timedOut(PostgresTimeout)
    /// ``PostgresConnection/close()`` ended the connection, or the query came after it had closed.
    case closed
    /// The API was used in a way this client does not support (a transaction-control statement
    /// through `query`, an unexpected result from the server).
    case protocolMisuse(String)

    public var description: String {
        switch self {
        case .connectionFailed(let message): return "connection failed: \(message)"
        case .server(let error): return "server error: \(error)"
        case .connectionLost(let message): return "connection lost: \(message)"
        case .commitOutcomeUnknown(let message): return "commit outcome unknown: \(message)"
        case .timedOut(let timeout): return "timed out (\(timeout))"
        case .closed: return "connection closed"
        case .protocolMisuse(let message): return "protocol misuse: \(message)"
        }
    }
}

/// Which deadline passed.
public enum PostgresTimeout: Sendable, Equatable {
    /// ``PostgresConfiguration/connectTimeout``.
    case connect
    /// ``PostgresConfiguration/queryTimeout``.
    case query
}

/// An error the server reported for one statement, with its diagnostic fields.
public struct PostgresServerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The five-character SQLSTATE, e.g. `23505` for a unique violation.
    public var sqlState: String
    /// The primary message.
    public var message: String
    /// The optional detail (e.g. which key already exists).
    public var detail: String?
    /// The constraint the statement violated, when there is one.
    public var constraint: String?

    /// SQLSTATE `23505`.
    public static let uniqueViolation = "23505"

    public init(sqlState: String, message: String, detail: String? = nil, constraint: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.constraint = constraint
    }

    public var description: String {
        var text = "\(sqlState) \(message)"
        if let detail { text += " (\(detail))" }
        return text
    }
}
