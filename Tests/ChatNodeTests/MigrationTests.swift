import ChatNodeKit
import Glibc
import RunLoopChatPostgres
import RunLoopIMSQLite
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

/// `chat-node migrate`'s work: versions before and after, again with nothing to do, a newer schema refused.
@Suite("Migration")
struct MigrationTests {
    @Test("PostgreSQL: an empty database gets the schema; a second run changes nothing; a newer schema is refused and left alone")
    func postgres() async throws {
        let database = try await ChatPostgres.start(migrated: false)
        try await onLoopThread {
            #expect(try database.migrate().get() == ChatNodeMigration.Outcome(from: 0, to: ChatSchema.version))
            #expect(try database.migrate().get() == ChatNodeMigration.Outcome(from: ChatSchema.version, to: ChatSchema.version))
            try database.execute("UPDATE schema_version SET version = 42")
            #expect(try database.migrate().failure == .newerThanKnown(found: 42, known: ChatSchema.version))
            #expect(try database.execute("SELECT version FROM schema_version").int(0, 0) == 42)
        }
    }

    @Test("PostgreSQL down: the migration fails with the connection's error")
    func postgresDown() async throws {
        let database = try await ChatPostgres.start(migrated: false)
        database.server.stop()
        try await onLoopThread {
            guard case .database(.connectionFailed(_)) = try database.migrate().failure else {
                Issue.record("expected a connection failure")
                return
            }
        }
    }

    @Test("SQLite: a new file is created at the node's version; a second run changes nothing")
    func sqlite() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        #expect(try ChatNodeMigration.migrate(sqlitePath: path) == ChatNodeMigration.Outcome(from: 0, to: Int(SQLiteIMStore.schemaVersion)))
        let again = try ChatNodeMigration.migrate(sqlitePath: path)
        #expect(again.from == again.to && again.description.contains("nothing to do"))
    }
}
