import CSQLite
import RunLoopIM
import RunLoopIMCore

/// The store's tables — the schema the PostgreSQL store shares, table for table — and the upgrade of
/// files written before it. `PRAGMA user_version` says which schema a file has: 0 (or 1) for the first
/// one (messages, one inbox row per recipient and message, room members), 2 for the conversations and
/// cursors, 3 for accounts that can be disabled, 4 for each conversation's member count, 5 for this one
/// (each room's membership order).
extension SQLiteIMStore {
    /// The schema this code reads and writes.
    public static let schemaVersion: Int64 = 5

    /// Version 2: a conversation per room and per pair of users, numbering its messages (`last_seq`);
    /// a message row carries its conversation and number; a member row per (user, conversation) with
    /// the highest number the user acknowledged. Version 4: a conversation's `member_count`, kept by
    /// triggers in the transaction that adds or removes each member row — by whatever statement,
    /// a JOIN, a first direct message, an account's deletion —, so a JOIN_ACK, LEAVE_ACK or room list
    /// reads one row per room instead of counting its members. Version 5: a conversation's
    /// `membership_seq`, the number of its last JOIN or LEAVE, and each member's `joined_seq`, the
    /// number of the join that made them one (RunLoopChat's `MembershipCommit`).
    static let schema = """
        CREATE TABLE IF NOT EXISTS conversations(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, room TEXT,
            last_seq INTEGER NOT NULL DEFAULT 0, member_count INTEGER NOT NULL DEFAULT 0,
            membership_seq INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX IF NOT EXISTS conversations_by_room ON conversations(room) WHERE room IS NOT NULL;
        CREATE TABLE IF NOT EXISTS messages(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id), conversation_seq INTEGER NOT NULL,
            sender TEXT NOT NULL, client_id TEXT NOT NULL,
            to_user TEXT, to_room TEXT, text TEXT NOT NULL, sent_at_ms INTEGER NOT NULL,
            UNIQUE(sender, client_id), UNIQUE(conversation_id, conversation_seq));
        CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, seq);
        CREATE TABLE IF NOT EXISTS members(user TEXT NOT NULL, conversation_id INTEGER NOT NULL REFERENCES conversations(id),
            acked_through INTEGER NOT NULL, joined_seq INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(user, conversation_id)) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS members_by_conversation ON members(conversation_id, user);
        CREATE TRIGGER IF NOT EXISTS members_count_in AFTER INSERT ON members BEGIN
            UPDATE conversations SET member_count = member_count + 1 WHERE id = NEW.conversation_id; END;
        CREATE TRIGGER IF NOT EXISTS members_count_out AFTER DELETE ON members BEGIN
            UPDATE conversations SET member_count = member_count - 1 WHERE id = OLD.conversation_id; END;
        CREATE TABLE IF NOT EXISTS abandoned(sender TEXT NOT NULL, client_id TEXT NOT NULL,
            PRIMARY KEY(sender, client_id)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS users(name TEXT PRIMARY KEY) WITHOUT ROWID;
        """

    /// Creates the tables, or upgrades a version-0/1/2/3/4 file, in one transaction: a crash midway leaves
    /// the file as it was.
    /// - Throws: a file of a newer schema than ``schemaVersion`` (a newer node wrote it), or SQLite's error.
    func prepareSchema() throws(SQLiteError) {
        var version: Int64 = 0
        try database.query("PRAGMA user_version") { row in version = row.integer(0) }
        guard version < Self.schemaVersion else {
            guard version == Self.schemaVersion else {
                throw SQLiteError(
                    code: SQLITE_ERROR,
                    message: "\(database.path) has schema version \(version), newer than this node's \(Self.schemaVersion): run a newer node")
            }
            return
        }
        try database.transaction { () throws(SQLiteError) in
            var isFirstSchema = false
            try database.query("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'inbox'") { _ in isFirstSchema = true }
            if isFirstSchema {
                try database.execute(
                    "ALTER TABLE messages RENAME TO messages_v1; DROP INDEX IF EXISTS messages_by_room; DROP INDEX IF EXISTS messages_by_pair")
            }
            try addAccountStates()
            try addMemberCounts()
            try addMembershipOrder()
            try database.execute(Self.schema)
            if isFirstSchema { try upgradeFirstSchema() }
            try database.execute("PRAGMA user_version = \(Self.schemaVersion)")
        }
    }

    /// Version 2 to 3, inside the caller's transaction: an `accounts` table made before it (by
    /// `AccountStore`) gets the `disabled` flag, every account enabled. A file without accounts gets
    /// the table, flag included, when an `AccountStore` first opens it.
    private func addAccountStates() throws(SQLiteError) {
        guard try lacksColumn("disabled", of: "accounts") else { return }
        try database.execute("ALTER TABLE accounts ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0")
    }

    /// Version 2/3 to 4, inside the caller's transaction, before the schema's triggers exist: the
    /// conversations get `member_count`, filled by counting each one's members once. A version-0/1 file
    /// has no conversations yet: the upgrade that makes them inserts its members under the triggers.
    private func addMemberCounts() throws(SQLiteError) {
        guard try lacksColumn("member_count", of: "conversations") else { return }
        try database.execute(
            """
            ALTER TABLE conversations ADD COLUMN member_count INTEGER NOT NULL DEFAULT 0;
            UPDATE conversations SET member_count = (SELECT count(*) FROM members WHERE conversation_id = conversations.id);
            """)
    }

    /// Version 4 to 5, inside the caller's transaction: every room starts its membership order at 0 and
    /// every member had joined before it (`joined_seq` 0), so the members of an upgraded file are owed
    /// the notices of every change from now on.
    private func addMembershipOrder() throws(SQLiteError) {
        if try lacksColumn("membership_seq", of: "conversations") {
            try database.execute("ALTER TABLE conversations ADD COLUMN membership_seq INTEGER NOT NULL DEFAULT 0")
        }
        if try lacksColumn("joined_seq", of: "members") {
            try database.execute("ALTER TABLE members ADD COLUMN joined_seq INTEGER NOT NULL DEFAULT 0")
        }
    }

    /// Whether `table` exists without `column`: a table an upgrade step gives the column to.
    private func lacksColumn(_ column: String, of table: String) throws(SQLiteError) -> Bool {
        var hasTable = false
        var hasColumn = false
        try database.query("SELECT name FROM pragma_table_info(?)", [.text(table)]) { row in
            hasTable = true
            if row.text(0) == column { hasColumn = true }
        }
        return hasTable && !hasColumn
    }

    /// Version 0/1 to 2, inside the caller's transaction: each message keeps its seq and gets its
    /// conversation and its number there, in seq order; each room member, and each participant of a
    /// direct conversation, a cursor one below their oldest unacknowledged message of it (or at its
    /// last when none), so exactly what was undelivered stays undelivered.
    ///
    /// Inbox rows of a room the user has left are not carried over: a member row would make them a
    /// member again, and leaving already stopped that room's new messages.
    private func upgradeFirstSchema() throws(SQLiteError) {
        var conversations: [String: (id: Int64, last: Int64)] = [:]
        try database.query("SELECT seq, sender, client_id, to_user, to_room, text, sent_at_ms FROM messages_v1 ORDER BY seq") {
            row throws(SQLiteError) in
            let sender = row.text(1) ?? ""
            let recipient: IMRecipient = row.text(3).map { .user($0) } ?? row.text(4).map { .room($0) } ?? .user("")
            let key = IMConversation(from: sender, to: recipient).storageKey
            if conversations[key] == nil {
                try database.query("INSERT INTO conversations(key, room) VALUES (?, ?)", [.text(key), row.text(4).map { .text($0) } ?? .null])
                conversations[key] = (database.lastInsertedRowID, 0)
            }
            conversations[key]?.last += 1
            guard let conversation = conversations[key] else { return }
            try database.query(
                """
                INSERT INTO messages(seq, conversation_id, conversation_seq, sender, client_id, to_user, to_room, text, sent_at_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .integer(row.integer(0)), .integer(conversation.id), .integer(conversation.last), .text(sender), .text(row.text(2) ?? ""),
                    row.text(3).map { .text($0) } ?? .null, row.text(4).map { .text($0) } ?? .null, .text(row.text(5) ?? ""),
                    .integer(row.integer(6))
                ])
        }
        for conversation in conversations.values {
            try database.query("UPDATE conversations SET last_seq = ? WHERE id = ?", [.integer(conversation.last), .integer(conversation.id)])
        }
        // The oldest unacknowledged number of (user, conversation), less one; else the conversation's last.
        let cursor = """
            coalesce((SELECT min(m.conversation_seq) - 1 FROM inbox i JOIN messages m ON m.seq = i.seq
                      WHERE i.user = p.user AND m.conversation_id = c.id), c.last_seq)
            """
        try database.execute(
            """
            INSERT OR IGNORE INTO conversations(key, room) SELECT DISTINCT 'r:' || room, room FROM room_members;
            INSERT INTO members(user, conversation_id, acked_through)
                SELECT p.user, c.id, \(cursor) FROM room_members p JOIN conversations c ON c.key = 'r:' || p.room;
            INSERT OR IGNORE INTO members(user, conversation_id, acked_through)
                SELECT p.user, c.id, \(cursor) FROM (
                    SELECT sender AS user, conversation_id FROM messages WHERE to_user IS NOT NULL
                    UNION SELECT to_user, conversation_id FROM messages WHERE to_user IS NOT NULL) p
                JOIN conversations c ON c.id = p.conversation_id;
            DROP TABLE inbox;
            DROP TABLE room_members;
            DROP TABLE messages_v1;
            """)
    }
}
