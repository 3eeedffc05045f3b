public import Logging
public import RunLoopChatPostgres
public import RunLoopIMSQLite
public import RunLoopKit
public import RunLoopPostgres

/// `chat-node migrate`: brings a store's schema to the version this node runs against.
public enum ChatNodeMigration {
    /// What a migration did.
    public struct Outcome: Equatable, Sendable, CustomStringConvertible {
        /// The schema version before (0: no tables).
        public var from: Int
        /// The version now.
        public var to: Int

        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }

        public var description: String { from == to ? "schema version \(to), nothing to do" : "schema version \(from) → \(to)" }
    }

    /// Upgrades the SQLite file at `path` (creating it when missing) the way the node does when it
    /// opens it, in one transaction.
    /// - Throws: SQLite's error, or the file's schema is newer than this node's.
    public static func migrate(sqlitePath path: String) throws(SQLiteError) -> Outcome {
        let before = try version(of: path)
        let store = try SQLiteIMStore(path: path)
        store.database.close()
        return Outcome(from: Int(before), to: Int(SQLiteIMStore.schemaVersion))
    }

    /// Creates or upgrades the chat schema in the PostgreSQL database (``ChatSchema/migrate(on:completion:)``)
    /// over a connection of its own, closed afterwards. Refuses a database newer than this node.
    /// Loop thread only; `completion` runs there once.
    public static func migrate(
        postgres configuration: PostgresConfiguration, loop: RunLoop = .current, logger: Logger = Logger(label: "chat-node.migrate"),
        completion: @escaping (Result<Outcome, ChatSchemaError>) -> Void
    ) {
        var connection: PostgresConnection? = PostgresConnection(loop: loop, configuration: configuration, logger: logger)
        // The closures hold the connection until it answered; dropping it then breaks the cycle.
        func finish(_ result: Result<Outcome, ChatSchemaError>) {
            guard let ending = connection else { return }
            connection = nil
            ending.onClose = nil
            ending.close()
            completion(result)
        }
        connection?.onConnect = { connected in
            ChatSchema.migrate(on: connected) { result in finish(result.map { Outcome(from: $0.from, to: $0.to) }) }
        }
        connection?.onClose = { _, error in finish(.failure(.database(error))) }
        connection?.connect()
    }

    /// `PRAGMA user_version` of the file, 0 when it is new.
    private static func version(of path: String) throws(SQLiteError) -> Int64 {
        let database = try SQLiteDatabase(path: path, admit: SQLiteIMStore.admit)
        defer { database.close() }
        var version: Int64 = 0
        try database.query("PRAGMA user_version") { row in version = row.integer(0) }
        return version
    }
}
