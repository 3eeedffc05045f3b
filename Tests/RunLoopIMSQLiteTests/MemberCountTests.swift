import RunLoopTesting
import Testing

@testable import RunLoopChat
@testable import RunLoopIM
@testable import RunLoopIMCore
@testable import RunLoopIMSQLite

/// Schema 4: each conversation keeps its member count, so a JOIN_ACK, LEAVE_ACK or room list reads one
/// row per room — not a count of a room of 10,000 at every join.
@Suite("SQLite member counts")
struct MemberCountTests {
    /// Every conversation whose kept count differs from its member rows, as (key, kept, counted).
    static func miscounted(_ database: SQLiteDatabase) throws -> [String] {
        var wrong: [String] = []
        try database.query(
            "SELECT c.key, c.member_count, (SELECT count(*) FROM members WHERE conversation_id = c.id) AS n FROM conversations c WHERE c.member_count <> n"
        ) { row in wrong.append("\(row.text(0) ?? "") kept \(row.integer(1)), counted \(row.integer(2))") }
        return wrong
    }

    @Test("counts stay right across joins, joins again, leaves, a direct conversation and an account's removal")
    func countsStayRight() throws {
        let store = try SQLiteIMStore(path: ":memory:")
        let accounts = try AccountStore(database: store.database)
        for user in ["ann", "ben", "cat"] { #expect(try accounts.create(user: user, passwordHash: "h")) }
        #expect(try store.join(room: "town", user: "ann").get().room.members == 1)
        #expect(try store.join(room: "town", user: "ben").get().room.members == 2)
        #expect(try store.join(room: "town", user: "ben").get().room == Room(name: "town", members: 2, isMember: true), "joining again adds nobody")
        #expect(try store.join(room: "town", user: "cat").get().room.members == 3)
        #expect(try store.leave(room: "town", user: "cat").get().room == Room(name: "town", members: 2, isMember: false))
        #expect(store.leave(room: "town", user: "cat") == .failure(.notAMember))
        #expect(try store.join(room: "town", user: "cat").get().room.members == 3, "a member back after leaving counts once")
        #expect(try store.join(room: "attic", user: "cat").get().room.members == 1)
        guard case .stored = store.store(SchemaTests.message("d", to: .user("ben")), from: "ann", nowMilliseconds: 1) else {
            Issue.record("the direct message was not stored")
            return
        }
        #expect(try accounts.remove(user: "cat") == .done(account: "cat"))
        #expect(try Self.miscounted(store.database).isEmpty)
        #expect(try store.rooms(for: "ann").get() == [Room(name: "town", members: 2, isMember: true)], "attic, empty now, is not listed")
        #expect(try store.leave(room: "town", user: "ben").get().room.members == 1)
        #expect(try store.leave(room: "town", user: "ann").get().room == Room(name: "town", members: 0, isMember: false))
        #expect(try store.rooms(for: "ann").get().isEmpty)
        #expect(try Self.miscounted(store.database).isEmpty)
    }

    /// Schema 3's tables as the store wrote them (no `member_count`, no triggers).
    static let thirdSchema = """
        CREATE TABLE conversations(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, room TEXT,
            last_seq INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX conversations_by_room ON conversations(room) WHERE room IS NOT NULL;
        CREATE TABLE messages(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id), conversation_seq INTEGER NOT NULL,
            sender TEXT NOT NULL, client_id TEXT NOT NULL,
            to_user TEXT, to_room TEXT, text TEXT NOT NULL, sent_at_ms INTEGER NOT NULL,
            UNIQUE(sender, client_id), UNIQUE(conversation_id, conversation_seq));
        CREATE INDEX messages_by_conversation ON messages(conversation_id, seq);
        CREATE TABLE members(user TEXT NOT NULL, conversation_id INTEGER NOT NULL REFERENCES conversations(id),
            acked_through INTEGER NOT NULL, PRIMARY KEY(user, conversation_id)) WITHOUT ROWID;
        CREATE INDEX members_by_conversation ON members(conversation_id, user);
        CREATE TABLE abandoned(sender TEXT NOT NULL, client_id TEXT NOT NULL, PRIMARY KEY(sender, client_id)) WITHOUT ROWID;
        CREATE TABLE users(name TEXT PRIMARY KEY) WITHOUT ROWID;
        PRAGMA user_version = 3;
        """

    @Test("a schema-3 file gets the counts filled at its upgrade, and they are kept from then on")
    func upgradeFillsCounts() throws {
        let path = try SchemaTests.file(
            "schema-3.db",
            Self.thirdSchema + """
                INSERT INTO conversations(id, key, room) VALUES (1, 'r:town', 'town'), (2, 'r:attic', 'attic'), (3, 'direct ann ben', NULL);
                INSERT INTO members(user, conversation_id, acked_through) VALUES
                    ('ann', 1, 0), ('ben', 1, 0), ('cat', 1, 0), ('ann', 3, 0), ('ben', 3, 0);
                """)
        defer { removeDatabase(path) }
        let store = try SQLiteIMStore(path: path)
        var version: Int64 = 0
        try store.database.query("PRAGMA user_version") { row in version = row.integer(0) }
        #expect(version == SQLiteIMStore.schemaVersion && version == 5)
        #expect(try Self.miscounted(store.database).isEmpty)
        #expect(try store.rooms(for: "cat").get() == [Room(name: "town", members: 3, isMember: true)])
        #expect(try store.join(room: "town", user: "dan").get().room.members == 4)
        #expect(try store.join(room: "attic", user: "dan").get().room.members == 1)
        #expect(try store.leave(room: "town", user: "ann").get().room.members == 3)
        #expect(try Self.miscounted(store.database).isEmpty)
        store.database.close()
        // Opening it again (version 5 now) changes nothing.
        let again = try SQLiteIMStore(path: path)
        #expect(try again.rooms(for: "dan").get().map(\.members) == [1, 3])
    }

    @Test("a JOIN's answer and a room list read one row per room: the same work at 10 and 3,000 members, no full scan")
    func countsAreNotComputed() throws {
        var steps: [[Int]] = []
        for members in [10, 3_000] {
            let store = try SQLiteIMStore(path: ":memory:")
            for index in 0..<members - 1 { _ = try store.join(room: "town", user: "m\(index)").get() }
            _ = try store.join(room: "attic", user: "ann").get()
            let sql = [SQLiteIMStore.roomSummarySQL, SQLiteIMStore.roomListSQL]
            for statement in sql { _ = store.database.work(of: statement) }
            #expect(try store.join(room: "town", user: "ann").get().room == Room(name: "town", members: members, isMember: true))
            #expect(try store.rooms(for: "ann").get().map(\.members) == [1, members])
            let work = try sql.map { try #require(store.database.work(of: $0)) }
            #expect(work.allSatisfy { $0.fullScanSteps == 0 }, "\(work)")
            steps.append(work.map(\.virtualMachineSteps))
        }
        #expect(steps[0] == steps[1], "virtual-machine steps of the answer and the list at 10 and 3,000 members: \(steps)")
    }
}
