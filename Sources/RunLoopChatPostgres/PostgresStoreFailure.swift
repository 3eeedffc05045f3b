public import RunLoopPostgres

/// Why a ``PostgresChatStore`` read or change failed: which operation, and the database's error.
///
/// Stands in for RunLoopIMCore's `IMStoreFailure` of the asynchronous store protocol until that
/// lands; it carries the same two facts (what failed, whether trying again may help).
public struct PostgresStoreFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was asked, for logs: e.g. "inbox read for alice".
    public var operation: String
    public var cause: PostgresError

    public init(operation: String, cause: PostgresError) {
        self.operation = operation
        self.cause = cause
    }

    /// Whether the same call may succeed later: the database was unreachable or went away, or asked
    /// for a retry. A refused statement (a bug, a broken schema) is not.
    public var isTemporary: Bool { cause.isTemporary }

    public var description: String { "\(operation) failed (\(isTemporary ? "temporary" : "permanent")): \(cause)" }
}

extension PostgresError {
    /// Whether trying again later may succeed (see ``PostgresStoreFailure/isTemporary``).
    var isTemporary: Bool {
        switch self {
        case .connectionFailed, .connectionLost, .commitOutcomeUnknown, .timedOut, .closed: return true
        case .protocolMisuse: return false
        case .server(let error):
            // SQLSTATE classes: 08 connection exception, 53 insufficient resources, 57P operator
            // intervention (shutdown, restart), 40 transaction rollback (serialization, deadlock).
            return ["08", "53", "57P", "40"].contains { error.sqlState.hasPrefix($0) }
        }
    }
}
