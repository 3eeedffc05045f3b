public import RunLoopIMCore
public import RunLoopPostgres

extension IMStoreFailure {
    /// How ``PostgresChatStore`` tells the server that `operation` (e.g. "inbox read for alice")
    /// failed with `cause`: temporary when trying again later may help (see `PostgresError`'s cases:
    /// the database unreachable, gone, slow, or asking for a retry), permanent for a refused statement
    /// (a bug, a broken schema).
    public init(_ operation: String, cause: PostgresError) {
        self.init(operation, reason: "\(cause)", isTemporary: cause.isTemporary)
    }
}

extension PostgresError {
    /// Whether trying again later may succeed.
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
