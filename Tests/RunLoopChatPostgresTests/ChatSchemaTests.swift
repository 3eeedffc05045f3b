import RunLoopChatPostgres
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

/// The versioned schema: created and upgraded by `migrate`, checked by a node at start.
@Suite struct ChatSchemaTests {
    @Test("a database's version is current, needs a migration, or is newer than this build")
    func compatibility() {
        #expect(ChatSchema.compatibility(of: 0) == .needsMigration(found: 0))
        #expect(ChatSchema.compatibility(of: ChatSchema.version) == .current)
        #expect(ChatSchema.compatibility(of: ChatSchema.version + 1) == .newer(found: ChatSchema.version + 1))
    }

    @Test("the refusals tell the operator what to do and name both versions")
    func refusalMessages() {
        let old = ChatSchemaError.needsMigration(found: 0, required: 1).description
        #expect(old.contains("chat-node migrate") && old.contains("version 0") && old.contains("version 1"))
        let new = ChatSchemaError.newerThanKnown(found: 7, known: 1).description
        #expect(new.contains("version 7") && new.contains("version 1"))
    }

    @Test("migrate creates the schema once; run again it changes nothing, and a node may start")
    func migrateTwice() async throws {
        let database = try await ChatDatabase.start(migrated: false)
        let (before, first, second, after, tables) = try await onLoopThread {
            let connection = try database.connect()
            let loop = connection.loop
            let before = try waitFor(loop) { ChatSchema.check(on: connection, completion: $0) }
            let first = try waitFor(loop) { ChatSchema.migrate(on: connection, completion: $0) }
            let second = try waitFor(loop) { ChatSchema.migrate(on: connection, completion: $0) }
            let after = try waitFor(loop) { ChatSchema.check(on: connection, completion: $0) }
            let tables = try execute(connection, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").int(0, 0)
            return (before.failure, try first.get(), try second.get(), after.failure, tables)
        }
        #expect(before == .needsMigration(found: 0, required: ChatSchema.version))
        #expect(first == ChatSchema.Migration(from: 0, to: ChatSchema.version))
        #expect(second == ChatSchema.Migration(from: ChatSchema.version, to: ChatSchema.version))
        #expect(after == nil)
        // schema_version, conversations, messages, members, abandoned, users, accounts.
        #expect(tables == 7)
    }

    @Test("two nodes migrating at once: the lock makes the second wait and find the work done")
    func concurrentMigrations() async throws {
        let database = try await ChatDatabase.start(migrated: false)
        let (migrations, version) = try await onLoopThread {
            let first = try database.connect()
            let second = try database.connect()
            var results: [Result<ChatSchema.Migration, ChatSchemaError>] = []
            // Queued in one pass: both transactions reach the server together.
            ChatSchema.migrate(on: first) { results.append($0) }
            ChatSchema.migrate(on: second) { results.append($0) }
            try spin(first.loop) { results.count == 2 }
            return (try results.map { try $0.get() }, try execute(first, "SELECT version FROM schema_version").int(0, 0))
        }
        #expect(Set(migrations.map(\.from)) == [0, ChatSchema.version])
        #expect(migrations.allSatisfy { $0.to == ChatSchema.version })
        #expect(version == ChatSchema.version)
    }

    @Test("a schema newer than this build: a node refuses to start and migrate leaves it alone")
    func newerSchemaRefused() async throws {
        let database = try await ChatDatabase.start()
        let (check, migration, version) = try await onLoopThread {
            let connection = try database.connect()
            try execute(connection, "UPDATE schema_version SET version = $1", [String(ChatSchema.version + 1)])
            let check = try waitFor(connection.loop) { ChatSchema.check(on: connection, completion: $0) }
            let migration = try waitFor(connection.loop) { ChatSchema.migrate(on: connection, completion: $0) }
            return (check.failure, migration.failure, try execute(connection, "SELECT version FROM schema_version").int(0, 0))
        }
        let refusal = ChatSchemaError.newerThanKnown(found: ChatSchema.version + 1, known: ChatSchema.version)
        #expect(check == refusal)
        #expect(migration == refusal)
        #expect(version == ChatSchema.version + 1)
    }

    @Test("an unreachable database is a database error, not a version verdict")
    func unreachable() async throws {
        let database = try await ChatDatabase.start(migrated: false)
        let failure = try await onLoopThread {
            let connection = try database.connect()
            connection.close()
            return try waitFor(connection.loop) { ChatSchema.check(on: connection, completion: $0) }.failure
        }
        #expect(failure == .database(.closed))
    }
}

extension Result {
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
