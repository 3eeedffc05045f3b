public import RunLoopPostgres

/// Where a node keeps accounts, rooms, history and undelivered messages.
public enum ChatNodeStorage: Sendable, CustomStringConvertible {
    /// One SQLite file on this machine, created if missing and upgraded on open: a node alone.
    case sqlite(path: String)
    /// A PostgreSQL database several nodes may share. Its schema is RunLoopChatPostgres's
    /// `ChatSchema`, which `chat-node migrate` creates or upgrades; a node does not.
    case postgres(PostgresConfiguration)

    /// For logs and messages: the file, or the database's address with its password hidden.
    public var description: String {
        switch self {
        case .sqlite(let path): return "SQLite \(path)"
        case .postgres(let configuration): return "PostgreSQL \(PostgresURL.redacted(configuration))"
        }
    }
}
