import RunLoopTesting
import Testing

@testable import RunLoopChat
@testable import RunLoopIM
@testable import RunLoopIMCore
@testable import RunLoopIMSQLite

/// The SQLite store's schema 2: cursors instead of inbox rows, reads that use the indexes, and the
/// upgrade of files written by the first schema.
@Suite("SQLite schema")
struct SchemaTests {
    static func message(_ id: String, to recipient: IMRecipient) -> IMMessage {
        IMMessage(id: id, from: "", recipient: recipient, text: id, seq: 0, sentAtMilliseconds: 0)
    }

    static func count(_ table: String, in database: SQLiteDatabase) throws -> Int {
        var count = 0
        try database.query("SELECT count(*) FROM \(table)") { row in count = Int(row.integer(0)) }
        return count
    }

    @Test("a room message is one row, whatever the room's size: no row per member")
    func fanOutIsOneRow() throws {
        let store = try SQLiteIMStore(path: ":memory:")
        for index in 0..<100 { _ = try store.join(room: "hall", user: "u\(index)").get() }
        let members = try Self.count("members", in: store.database)
        guard case .stored(_, let recipients, true) = store.store(Self.message("m", to: .room("hall")), from: "u0", nowMilliseconds: 1) else {
            Issue.record("not stored")
            return
        }
        #expect(recipients.count == 99)
        #expect(try Self.count("messages", in: store.database) == 1 && Self.count("members", in: store.database) == members)
    }

    @Test("a window read over a 20,000-message backlog visits the window, not the backlog: no full scan, a few steps a message")
    func windowReadUsesIndexes() throws {
        let store = try SQLiteIMStore(path: ":memory:")
        for user in ["alice", "bob"] { _ = try store.join(room: "big", user: user).get() }
        _ = store.store(Self.message("hello", to: .user("bob")), from: "alice", nowMilliseconds: 1)
        // 20,000 room messages from alice that bob has not read, written directly in one transaction.
        try store.database.transaction { () throws(SQLiteError) in
            try store.database.execute(
                """
                INSERT INTO messages(conversation_id, conversation_seq, sender, client_id, to_room, text, sent_at_ms)
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
                SELECT (SELECT id FROM conversations WHERE key = 'r:big'), i, 'alice', 'b' || i, 'big', 'x', 1 FROM n;
                UPDATE conversations SET last_seq = 20000 WHERE key = 'r:big';
                """)
        }
        let statements = [SQLiteIMStore.conversationsBehindSQL, SQLiteIMStore.conversationMessagesSQL]
        func work(_ read: () throws -> [IMMessage]) throws -> (messages: [IMMessage], fullScans: Int, steps: Int) {
            for sql in statements { _ = store.database.work(of: sql) }
            let messages = try read()
            let counts = statements.compactMap { store.database.work(of: $0) }
            return (messages, counts.reduce(0) { $0 + $1.fullScanSteps }, counts.reduce(0) { $0 + $1.virtualMachineSteps })
        }
        let first = try work { try store.undelivered(for: "bob", after: [:], limit: 100).get() }
        #expect(first.messages.map(\.conversationSeq) == Array(1...100), "the room (created by the joins) first, from bob's cursor")
        let deep = try work { try store.undelivered(for: "bob", after: [.room("big"): 19_950], limit: 100).get() }
        #expect(deep.messages.map(\.conversationSeq) == Array(19_951...20_000) + [1] && deep.messages.last?.text == "hello")
        for read in [first, deep] {
            #expect(read.fullScans == 0)
            #expect(read.steps < 5_000, "\(read.steps) steps for a window of 100 over 20,000 messages")
        }
    }

    @Test("an acknowledgement is lookups by key: no temporary table (an UPDATE … FROM built one each time), no scan, a few steps")
    func acknowledgementUsesKeys() throws {
        let store = try SQLiteIMStore(path: ":memory:")
        for index in 0..<50 { _ = try store.join(room: "hall", user: "u\(index)").get() }
        for index in 0..<20 { _ = store.store(Self.message("m\(index)", to: .room("hall")), from: "u0", nowMilliseconds: 1) }
        let statements = [SQLiteIMStore.placeOfMessageSQL, SQLiteIMStore.moveCursorSQL]
        for sql in statements {
            var opcodes: [String] = []
            try store.database.query("EXPLAIN \(sql)") { row in opcodes.append(row.text(1) ?? "") }
            #expect(!opcodes.isEmpty && opcodes.allSatisfy { !["OpenEphemeral", "OpenAutoindex", "SorterOpen"].contains($0) }, "\(sql)")
        }
        let inbox = try store.undelivered(for: "u7")
        store.acknowledge(["u7": inbox.map(\.seq), "u8": [inbox[4].seq]])
        let work = statements.compactMap { store.database.work(of: $0) }
        #expect(work.count == 2 && work.allSatisfy { $0.fullScanSteps == 0 })
        #expect(work.reduce(0) { $0 + $1.virtualMachineSteps } < 40 * 21, "a few steps per acknowledged seq")
        #expect(try store.undelivered(for: "u7").isEmpty && store.undelivered(for: "u8").count == 15)
    }

    @Test("a new room message's recipients are one read of the members index, every member but the sender, no cursor row read")
    func newMessageRecipientsFromTheIndex() throws {
        let store = try SQLiteIMStore(path: ":memory:")
        for index in 0..<20 { _ = try store.join(room: "hall", user: "u\(index)").get() }
        var plan: [String] = []
        try store.database.query("EXPLAIN QUERY PLAN \(SQLiteIMStore.newMessageRecipientsSQL)", [.integer(1), .text("u0")]) { row in
            plan.append(row.text(3) ?? "")
        }
        #expect(plan.count == 1 && plan[0].contains("COVERING INDEX members_by_conversation"), "\(plan)")
        _ = store.database.runs(of: SQLiteIMStore.newMessageRecipientsSQL)
        guard case .stored(let stored, let recipients, true) = store.store(Self.message("m", to: .room("hall")), from: "u3", nowMilliseconds: 1)
        else {
            Issue.record("not stored")
            return
        }
        #expect(store.database.runs(of: SQLiteIMStore.newMessageRecipientsSQL) == 1)
        #expect(recipients == (0..<20).map { "u\($0)" }.filter { $0 != "u3" }.sorted())
        // A resend still names only those who have not acknowledged it.
        store.acknowledge([stored.seq], for: "u5")
        guard case .stored(_, let again, false) = store.store(Self.message("m", to: .room("hall")), from: "u3", nowMilliseconds: 2) else {
            Issue.record("resend not answered")
            return
        }
        #expect(again == recipients.filter { $0 != "u5" })
    }

    @Test("a pass's acknowledgements look each message up once, however many members acknowledge it, and move every cursor")
    func batchLooksEachMessageUpOnce() throws {
        let store = try SQLiteIMStore(path: ":memory:")
        for index in 0..<50 { _ = try store.join(room: "hall", user: "u\(index)").get() }
        for index in 0..<3 { _ = store.store(Self.message("m\(index)", to: .room("hall")), from: "u0", nowMilliseconds: 1) }
        let seqs = try store.undelivered(for: "u1").map(\.seq)
        try #require(seqs.count == 3)
        _ = store.database.runs(of: SQLiteIMStore.placeOfMessageSQL)
        var batch: [String: [UInt64]] = [:]
        for index in 1..<50 { batch["u\(index)"] = seqs }
        batch["u0"] = [seqs[0], 999_999]
        store.acknowledge(batch)
        #expect(store.database.runs(of: SQLiteIMStore.placeOfMessageSQL) == 4, "three messages and one unknown seq, each once")
        for index in 1..<50 { #expect(try store.undelivered(for: "u\(index)").isEmpty, "u\(index)") }
    }

    /// A database file at a new temporary path, written by `sql` and closed.
    static func file(_ name: String, _ sql: String) throws -> String {
        let path = temporaryPath(name)
        let database = try SQLiteDatabase(path: path)
        try database.execute(sql)
        database.close()
        return path
    }

    /// The first schema's statements, as the store wrote files before schema 2.
    static let firstSchema = """
        CREATE TABLE messages(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            sender TEXT NOT NULL, client_id TEXT NOT NULL,
            to_user TEXT, to_room TEXT, text TEXT NOT NULL, sent_at_ms INTEGER NOT NULL,
            UNIQUE(sender, client_id));
        CREATE TABLE inbox(user TEXT NOT NULL, seq INTEGER NOT NULL REFERENCES messages(seq),
            PRIMARY KEY(user, seq)) WITHOUT ROWID;
        CREATE TABLE abandoned(sender TEXT NOT NULL, client_id TEXT NOT NULL,
            PRIMARY KEY(sender, client_id)) WITHOUT ROWID;
        CREATE TABLE room_members(room TEXT NOT NULL, user TEXT NOT NULL,
            PRIMARY KEY(room, user)) WITHOUT ROWID;
        CREATE TABLE users(name TEXT PRIMARY KEY) WITHOUT ROWID;
        CREATE INDEX messages_by_room ON messages(to_room, seq) WHERE to_room IS NOT NULL;
        CREATE INDEX messages_by_pair ON messages(sender, to_user, seq) WHERE to_user IS NOT NULL;
        """

    @Test(
        "a first-schema file is upgraded in one go: every undelivered message still undelivered, in order, numbered; acks, resends and abandons work")
    func upgradeFromTheFirstSchema() throws {
        let path = try Self.file(
            "schema-1.db",
            Self.firstSchema + """
                INSERT INTO users(name) VALUES ('alice'), ('bob'), ('carol');
                INSERT INTO room_members(room, user) VALUES ('lobby', 'alice'), ('lobby', 'bob'), ('lobby', 'carol');
                INSERT INTO messages(seq, sender, client_id, to_user, to_room, text, sent_at_ms) VALUES
                    (1, 'alice', 'r1', NULL, 'lobby', 'r1', 10), (2, 'alice', 'd1', 'bob', NULL, 'd1', 20),
                    (3, 'bob', 'd2', 'alice', NULL, 'd2', 30), (4, 'alice', 'r2', NULL, 'lobby', 'r2', 40),
                    (5, 'carol', 'r3', NULL, 'lobby', 'r3', 50), (6, 'alice', 'd3', 'bob', NULL, 'd3', 60);
                INSERT INTO inbox(user, seq) VALUES ('bob', 2), ('bob', 4), ('bob', 5), ('bob', 6), ('alice', 5);
                INSERT INTO abandoned(sender, client_id) VALUES ('alice', 'gone');
                """)
        defer { removeDatabase(path) }
        let store = try SQLiteIMStore(path: path)
        var version: Int64 = 0
        try store.database.query("PRAGMA user_version") { row in version = row.integer(0) }
        #expect(version == SQLiteIMStore.schemaVersion)
        var tables: [String] = []
        try store.database.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") { row in tables.append(row.text(0) ?? "") }
        #expect(!tables.contains("inbox") && !tables.contains("room_members") && !tables.contains("messages_v1"))

        let bob = try store.undelivered(for: "bob")
        #expect(bob.map(\.seq) == [4, 5, 2, 6], "the room (first written), then the direct conversation, each in order")
        #expect(bob.map(\.conversationSeq) == [2, 3, 1, 3] && bob.map(\.sentAtMilliseconds) == [40, 50, 20, 60])
        #expect(try store.undelivered(for: "alice").map(\.seq) == [5])
        #expect(try store.undelivered(for: "carol").isEmpty)

        store.acknowledge([5], for: "bob")
        #expect(try store.undelivered(for: "bob").map(\.seq) == [2, 6])
        store.acknowledge([2], for: "bob")
        #expect(try store.undelivered(for: "bob").map(\.seq) == [6])
        guard case .stored(let resent, _, false) = store.store(Self.message("d1", to: .user("bob")), from: "alice", nowMilliseconds: 99) else {
            Issue.record("a resend of a first-schema message was not recognised")
            return
        }
        #expect(resent.seq == 2 && resent.conversationSeq == 1 && resent.sentAtMilliseconds == 20)
        #expect(store.store(Self.message("gone", to: .user("bob")), from: "alice", nowMilliseconds: 99) == .refused(.badRequest))
        guard case .stored(let next, let recipients, true) = store.store(Self.message("r4", to: .room("lobby")), from: "bob", nowMilliseconds: 99)
        else {
            Issue.record("no new message after the upgrade")
            return
        }
        #expect(next.seq == 7 && next.conversationSeq == 4 && recipients == ["alice", "carol"])
        #expect(try store.rooms(for: "carol").get() == [Room(name: "lobby", members: 3, isMember: true)])
        let history = try store.history(HistoryQuery(conversation: .user("alice")), for: "bob", limit: 10).get()
        #expect(history.messages.map(\.text) == ["d3", "d2", "d1"])
    }

    @Test("a file of a newer schema is refused with both versions named")
    func newerSchemaRefused() throws {
        let path = try Self.file("schema-9.db", "PRAGMA user_version = 9")
        defer { removeDatabase(path) }
        let error = #expect(throws: SQLiteError.self) { try SQLiteIMStore(path: path) }
        #expect(error?.message.contains("schema version 9, newer than this node's \(SQLiteIMStore.schemaVersion)") == true)
    }
}
