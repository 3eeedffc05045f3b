public import RunLoopPostgres

extension ChatSchema {
    /// What a migration did.
    public struct Migration: Equatable, Sendable {
        /// The version before.
        public var from: Int
        /// The version now (``ChatSchema/version``).
        public var to: Int

        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// Creates the schema or upgrades it to ``version``, in one transaction (one round trip): all the
    /// missing steps, or none. Running it again changes nothing. Two nodes may run it at once: the
    /// transaction first takes an advisory lock, so the second waits for the first's commit and then
    /// finds nothing left to do.
    ///
    /// Refuses a database newer than this build (``ChatSchemaError/newerThanKnown(found:known:)``),
    /// leaving it as it was. `completion` runs once on the connection's loop thread.
    public static func migrate(on connection: PostgresConnection, completion: @escaping (Result<Migration, ChatSchemaError>) -> Void) {
        // The steps cannot wait for the version to come back (the whole transaction leaves in one
        // pipeline), so each checks it on the server, in a DO block, after the lock was granted.
        let upgrades = steps.enumerated().map { index, statements in
            PostgresStatement(
                """
                DO $step$ BEGIN
                IF (SELECT version FROM schema_version) = \(index) THEN
                \(statements.joined(separator: ";\n"));
                UPDATE schema_version SET version = \(index + 1);
                END IF;
                END $step$
                """)
        }
        let statements =
            [
                PostgresStatement("SELECT pg_advisory_xact_lock($1::bigint)", [String(migrationLock)]),
                PostgresStatement(
                    "CREATE TABLE IF NOT EXISTS schema_version(single boolean PRIMARY KEY DEFAULT true CHECK (single), version integer NOT NULL)"),
                PostgresStatement("INSERT INTO schema_version(version) VALUES (0) ON CONFLICT DO NOTHING"),
                versionQuery
            ] + upgrades + [versionQuery]
        connection.transaction(statements) { result in
            completion(
                result.mapError(ChatSchemaError.database).flatMap { rows in
                    guard let before = rows[3].int(0, 0), let after = rows[rows.count - 1].int(0, 0) else {
                        return .failure(.database(.protocolMisuse("schema_version holds no version")))
                    }
                    if after > version { return .failure(.newerThanKnown(found: after, known: version)) }
                    return .success(Migration(from: before, to: after))
                })
        }
    }

    /// Reads the database's version and says whether a node of this build may run against it:
    /// success, or ``ChatSchemaError/needsMigration(found:required:)`` (the operator runs
    /// `chat-node migrate`) or ``ChatSchemaError/newerThanKnown(found:known:)``. Changes nothing.
    /// `completion` runs once on the connection's loop thread.
    public static func check(on connection: PostgresConnection, completion: @escaping (Result<Void, ChatSchemaError>) -> Void) {
        connection.query(versionQuery.sql) { result in
            let found: Int
            switch result {
            case .success(let rows):
                found = rows.count == 0 ? 0 : rows.int(0, 0) ?? 0
            case .failure(.server(let error)) where error.sqlState == undefinedTable:
                found = 0
            case .failure(let error):
                return completion(.failure(.database(error)))
            }
            completion(refusal(toRunAgainst: found).map { .failure($0) } ?? .success(()))
        }
    }

    private static let versionQuery = PostgresStatement("SELECT version FROM schema_version")
    /// SQLSTATE `42P01`: no chat tables at all yet.
    private static let undefinedTable = "42P01"
    /// The advisory lock migrations take: "RLKCHAT" in ASCII (the send locks are hashes; sharing a
    /// key by chance would only make the two wait for each other).
    static let migrationLock: Int64 = 0x52_4C_4B_43_48_41_54
}
