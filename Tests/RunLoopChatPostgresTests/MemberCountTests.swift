import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

@testable import RunLoopChatPostgres

/// Schema 3: each conversation keeps its member count (a trigger on `members`), so a JOIN_ACK,
/// LEAVE_ACK or room list reads one row per room, as the SQLite store does.
@Suite struct PostgresMemberCountTests {
    /// Conversations whose kept count differs from their member rows.
    static let miscounted = """
        SELECT c.key FROM conversations c
        WHERE c.member_count <> (SELECT count(*) FROM members mb WHERE mb.conversation_id = c.id)
        """

    @Test("counts stay right across joins, joins again, leaves, a direct conversation and an account's removal")
    func countsStayRight() async throws {
        let database = try await ChatDatabase.start()
        let (answers, rooms, wrong) = try await onLoopThread {
            let store = try database.store()
            for user in ["ann", "ben", "cat"] {
                #expect(try waitFor(store.loop) { store.createAccount(user, passwordHash: "h", completion: $0) }.get())
            }
            let answers = [
                try store.joining("town", "ann"), try store.joining("town", "ben"), try store.joining("town", "ben"),
                try store.joining("town", "cat"), try store.leaving("town", "cat"), try store.joining("town", "cat"),
                try store.joining("attic", "cat")
            ]
            _ = try store.stored("d", id: "d", from: "ann", to: .user("ben"))
            _ = try waitFor(store.loop) { store.removeAccount("cat", completion: $0) }.get()
            let connection = try database.connect()
            return (answers, try store.roomList("ann"), try execute(connection, Self.miscounted).count)
        }
        #expect(answers.map { (try? $0.get())?.members } == [1, 2, 2, 3, 2, 3, 1])
        #expect(rooms == [Room(name: "town", members: 2, isMember: true)], "attic, empty since cat's removal, is not listed")
        #expect(wrong == 0)
    }

    @Test("migrate fills the counts of a version-2 database; the answers read the kept count, not the member rows")
    func upgradeAndKeptCount() async throws {
        let database = try await ChatDatabase.start(migrated: false)
        let (migration, joined, listed, afterRows) = try await onLoopThread {
            let connection = try database.connect()
            try execute(connection, "CREATE TABLE schema_version(single boolean PRIMARY KEY DEFAULT true CHECK (single), version integer NOT NULL)")
            for statement in ChatSchema.steps[0] + ChatSchema.steps[1] { try execute(connection, statement) }
            try execute(connection, "INSERT INTO schema_version(version) VALUES (2)")
            try execute(connection, "INSERT INTO conversations(key, room) VALUES ('r:town', 'town')")
            try execute(
                connection,
                "INSERT INTO members(\"user\", conversation_id, acked_through) SELECT 'm' || i, (SELECT id FROM conversations), 0 FROM generate_series(1, 40) i"
            )
            let migration = try waitFor(connection.loop) { ChatSchema.migrate(on: connection, completion: $0) }.get()
            let store = try database.store()
            let joined = try store.joining("town", "ann")
            // Rows added behind the trigger's back: an answer that counted rows would see them.
            try execute(connection, "ALTER TABLE members DISABLE TRIGGER members_counted")
            try execute(
                connection,
                "INSERT INTO members(\"user\", conversation_id, acked_through) SELECT 'x' || i, (SELECT id FROM conversations), 0 FROM generate_series(1, 5) i"
            )
            try execute(connection, "ALTER TABLE members ENABLE TRIGGER members_counted")
            let listed = try store.roomList("ann")
            let afterRows = try store.joining("town", "ben")
            return (migration, joined, listed, afterRows)
        }
        #expect(migration == ChatSchema.Migration(from: 2, to: ChatSchema.version) && ChatSchema.version == 4)
        #expect(joined == .success(Room(name: "town", members: 41, isMember: true)), "40 filled by the migration, one by the trigger")
        #expect(listed == [Room(name: "town", members: 41, isMember: true)], "the list reads the kept count (46 rows)")
        #expect(afterRows == .success(Room(name: "town", members: 42, isMember: true)))
    }
}
