public import Logging
public import RunLoopChat
public import RunLoopIM
public import RunLoopIMCore

/// An `IMServerStore` and `ChatStore` in one SQLite file (WAL mode): messages, each user's undelivered inbox,
/// abandoned ids, room members and the users seen. Every rule of the protocol's delivery guarantee is
/// a constraint or a transaction here, so it holds across a crash of the server process:
/// - (sender, client id) is UNIQUE: a resend finds the first row and gets its seq back;
/// - an abandoned (sender, id) has its own row, checked before storing;
/// - a stored message and its recipients' inbox rows are written in one transaction, committed before
///   SEND_ACK goes out;
/// - the inbox is read in seq order and a row leaves only on the recipient's DELIVER_ACK.
///
/// Loop thread only (the server's); calls are synchronous and short, so every completion of the
/// store protocols runs before the call returns. A SQLite failure never passes as success: a send is
/// refused with `internalError` (the client sends it again), an abandon or an inbox read fails with
/// `IMStoreFailure` (the client asks again; the session reads again), and it is logged at `error`.
public final class SQLiteIMStore: SynchronousChatStore {
    public let database: SQLiteDatabase
    /// Accounts and passwords checked at login; `nil`: any user name logs in with any password.
    public var accounts: [String: String]?
    /// Whether a direct message to a user never seen (no row in `users`) is refused with
    /// `unknownRecipient`. On by default when ``accounts`` is set.
    public var requiresKnownRecipients: Bool
    public var logger: Logger

    /// Opens or creates the store at `path` (":memory:" for a throwaway one).
    public init(
        path: String, accounts: [String: String]? = nil, durability: SQLiteDatabase.Durability = .processCrash,
        logger: Logger = Logger(label: "RunLoopIM.sqlite")
    ) throws(SQLiteError) {
        database = try SQLiteDatabase(path: path, durability: durability)
        self.accounts = accounts
        self.logger = logger
        requiresKnownRecipients = accounts != nil
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS messages(
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                sender TEXT NOT NULL, client_id TEXT NOT NULL,
                to_user TEXT, to_room TEXT, text TEXT NOT NULL, sent_at_ms INTEGER NOT NULL,
                UNIQUE(sender, client_id));
            CREATE TABLE IF NOT EXISTS inbox(user TEXT NOT NULL, seq INTEGER NOT NULL REFERENCES messages(seq),
                PRIMARY KEY(user, seq)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS abandoned(sender TEXT NOT NULL, client_id TEXT NOT NULL,
                PRIMARY KEY(sender, client_id)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS room_members(room TEXT NOT NULL, user TEXT NOT NULL,
                PRIMARY KEY(room, user)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS users(name TEXT PRIMARY KEY) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS messages_by_room ON messages(to_room, seq) WHERE to_room IS NOT NULL;
            CREATE INDEX IF NOT EXISTS messages_by_pair ON messages(sender, to_user, seq) WHERE to_user IS NOT NULL;
            """)
        for user in accounts?.keys.sorted() ?? [] { try database.query("INSERT OR IGNORE INTO users(name) VALUES (?)", [.text(user)]) }
    }

    public func join(room: String, user: String, maximumRooms: Int?) -> Result<Room, IMStatusCode> {
        guard RoomName.isValid(room) else { return .failure(.badRequest) }
        if let maximumRooms {
            do {
                var rooms = 0
                try database.query("SELECT count(*) FROM room_members WHERE user = ?", [.text(user)]) { row in rooms = Int(row.integer(0)) }
                if rooms >= maximumRooms, try !isMember(user, of: room) { return .failure(.tooManyRooms) }
            } catch {
                logger.error("rooms of \(user) not counted: \(error)")
                return .failure(.internalError)
            }
        }
        return roomChange(room, user, "INSERT OR IGNORE INTO room_members(room, user) VALUES (?, ?)")
    }

    public func leave(room: String, user: String) -> Result<Room, IMStatusCode> {
        do {
            guard try isMember(user, of: room) else { return .failure(.notAMember) }
        } catch {
            logger.error("membership of \(user) in \(room) not read: \(error)")
            return .failure(.internalError)
        }
        return roomChange(room, user, "DELETE FROM room_members WHERE room = ? AND user = ?")
    }

    public func rooms(for user: String, after: String, limit: Int) -> Result<[Room], IMStatusCode> {
        var rooms: [Room] = []
        do {
            try database.query(
                "SELECT room, count(*), max(user = ?) FROM room_members WHERE room > ? GROUP BY room ORDER BY room LIMIT ?",
                [.text(user), .text(after), .integer(Int64(clamping: limit))]
            ) { row in
                rooms.append(Room(name: row.text(0) ?? "", members: Int(row.integer(1)), isMember: row.integer(2) != 0))
            }
        } catch {
            logger.error("rooms not listed: \(error)")
            return .failure(.internalError)
        }
        return .success(rooms)
    }

    public func history(_ query: HistoryQuery, for user: String, limit: Int) -> Result<HistoryPage, IMStatusCode> {
        let before = Int64(clamping: query.before == 0 ? UInt64(Int64.max) : query.before)
        let columns = "seq, sender, client_id, to_user, to_room, text, sent_at_ms"
        let sql: String
        let parameters: [SQLiteDatabase.Value]
        do {
            switch query.conversation {
            case .room(let room):
                guard try isMember(user, of: room) else { return .failure(.notAMember) }
                sql = "SELECT \(columns) FROM messages WHERE to_room = ? AND seq < ? ORDER BY seq DESC LIMIT ?"
                parameters = [.text(room), .integer(before), .integer(Int64(limit) + 1)]
            case .user(let other):
                sql =
                    "SELECT \(columns) FROM messages WHERE seq < ? AND "
                    + "((sender = ? AND to_user = ?) OR (sender = ? AND to_user = ?)) ORDER BY seq DESC LIMIT ?"
                parameters = [.integer(before), .text(user), .text(other), .text(other), .text(user), .integer(Int64(limit) + 1)]
            }
            var messages: [ChatMessage] = []
            try database.query(sql, parameters) { row in messages.append(Self.message(from: row)) }
            let more = messages.count > limit
            if more { messages.removeLast() }
            return .success(HistoryPage(messages: messages, moreAvailable: more))
        } catch {
            logger.error("history for \(user) not read: \(error)")
            return .failure(.internalError)
        }
    }

    private func roomChange(_ room: String, _ user: String, _ sql: String) -> Result<Room, IMStatusCode> {
        do {
            var info = Room(name: room, members: 0, isMember: false)
            try database.transaction { () throws(SQLiteError) in
                try database.query(sql, [.text(room), .text(user)])
                try database.query("SELECT count(*), coalesce(max(user = ?), 0) FROM room_members WHERE room = ?", [.text(user), .text(room)]) {
                    row in
                    info = Room(name: room, members: Int(row.integer(0)), isMember: row.integer(1) != 0)
                }
            }
            return .success(info)
        } catch {
            logger.error("room \(room) not changed for \(user): \(error)")
            return .failure(.internalError)
        }
    }

    public func authenticate(_ login: IMLoginAttempt) -> IMLoginVerdict {
        if let accounts, accounts[login.user] != login.password {
            return .refused(.authenticationFailed, reason: "unknown user or wrong password")
        }
        do {
            try database.query("INSERT OR IGNORE INTO users(name) VALUES (?)", [.text(login.user)])
            return .accepted
        } catch {
            logger.error("login of \(login.user) not recorded: \(error)")
            return .refused(.internalError, reason: "storage failure")
        }
    }

    public func store(_ message: IMMessage, from sender: String, nowMilliseconds: UInt64) -> IMStoreResult {
        guard !message.id.isEmpty else { return .refused(.badRequest) }
        let target = message.recipient
        do {
            return try database.transaction { () throws(SQLiteError) -> IMStoreResult in
                if let earlier = try find(sender: sender, id: message.id) {
                    var waiting: [String] = []
                    try database.query("SELECT user FROM inbox WHERE seq = ? ORDER BY user", [.integer(Int64(earlier.seq))]) { row in
                        if let user = row.text(0) { waiting.append(user) }
                    }
                    return .stored(earlier, recipients: waiting, isNew: false)
                }
                var abandoned = false
                try database.query("SELECT 1 FROM abandoned WHERE sender = ? AND client_id = ?", [.text(sender), .text(message.id)]) { _ in
                    abandoned = true
                }
                if abandoned { return .refused(.badRequest) }
                switch target {
                case .user(let name):
                    guard try isKnown(name) else { return .refused(.unknownRecipient) }
                case .room(let name):
                    guard try isMember(sender, of: name) else { return .refused(.unknownRecipient) }
                }
                var stored = message
                stored.from = sender
                stored.sentAtMilliseconds = nowMilliseconds
                let (toUser, toRoom): (SQLiteDatabase.Value, SQLiteDatabase.Value)
                switch target {
                case .user(let name): (toUser, toRoom) = (.text(name), .null)
                case .room(let name): (toUser, toRoom) = (.null, .text(name))
                }
                try database.query(
                    "INSERT INTO messages(sender, client_id, to_user, to_room, text, sent_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
                    [.text(sender), .text(message.id), toUser, toRoom, .text(stored.text), .integer(Int64(nowMilliseconds))])
                stored.seq = UInt64(database.lastInsertedRowID)
                let targets = try recipients(of: stored, from: sender)
                for user in targets {
                    try database.query("INSERT INTO inbox(user, seq) VALUES (?, ?)", [.text(user), .integer(Int64(stored.seq))])
                }
                return .stored(stored, recipients: targets, isNew: true)
            }
        } catch {
            logger.error("message \(message.id) from \(sender) not stored: \(error)")
            return .refused(.internalError)
        }
    }

    public func abandon(_ ids: [String], from sender: String) -> Result<[IMAbandonOutcome], IMStoreFailure> {
        do {
            return .success(
                try database.transaction { () throws(SQLiteError) -> [IMAbandonOutcome] in
                    var results: [IMAbandonOutcome] = []
                    for id in ids {
                        let earlier = try find(sender: sender, id: id)
                        if earlier == nil {
                            try database.query("INSERT OR IGNORE INTO abandoned(sender, client_id) VALUES (?, ?)", [.text(sender), .text(id)])
                        }
                        results.append(IMAbandonOutcome(id: id, storedSeq: earlier?.seq))
                    }
                    return results
                })
        } catch {
            logger.error("abandon from \(sender) not recorded: \(error)")
            return .failure(IMStoreFailure("abandon from \(sender)", reason: "\(error)"))
        }
    }

    public func undelivered(for user: String, after seq: UInt64, limit: Int) -> Result<[IMMessage], IMStoreFailure> {
        var messages: [IMMessage] = []
        do {
            try database.query(
                """
                SELECT m.seq, m.sender, m.client_id, m.to_user, m.to_room, m.text, m.sent_at_ms
                FROM inbox i JOIN messages m ON m.seq = i.seq WHERE i.user = ? AND i.seq > ? ORDER BY i.seq LIMIT ?
                """, [.text(user), .integer(Int64(clamping: seq)), .integer(Int64(clamping: limit))]
            ) { row in messages.append(Self.message(from: row)) }
        } catch {
            logger.error("inbox of \(user) not read: \(error)")
            return .failure(IMStoreFailure("read the inbox of \(user)", reason: "\(error)"))
        }
        return .success(messages)
    }

    public func acknowledge(_ seqs: [UInt64], for user: String) {
        do {
            try database.transaction { () throws(SQLiteError) in
                // Client input: a seq past Int64.max names no stored message (SQLite's rowids are
                // signed), and converting it would trap and take the node down.
                for seq in seqs {
                    guard let key = Int64(exactly: seq) else { continue }
                    try database.query("DELETE FROM inbox WHERE user = ? AND seq = ?", [.text(user), .integer(key)])
                }
            }
        } catch {
            // Harmless: the messages come again at the next login and the client drops duplicates.
            logger.error("acknowledgement from \(user) not recorded: \(error)")
        }
    }

    /// Messages stored in all, for tests and summaries.
    public func storedCount() throws(SQLiteError) -> Int {
        var count = 0
        try database.query("SELECT count(*) FROM messages") { row in count = Int(row.integer(0)) }
        return count
    }

    private func find(sender: String, id: String) throws(SQLiteError) -> IMMessage? {
        var found: IMMessage?
        try database.query(
            """
            SELECT seq, sender, client_id, to_user, to_room, text, sent_at_ms FROM messages WHERE sender = ? AND client_id = ?
            """, [.text(sender), .text(id)]
        ) { row in found = Self.message(from: row) }
        return found
    }

    private func isKnown(_ user: String) throws(SQLiteError) -> Bool {
        guard requiresKnownRecipients else { return true }
        var known = false
        try database.query("SELECT 1 FROM users WHERE name = ?", [.text(user)]) { _ in known = true }
        return known
    }

    private func isMember(_ user: String, of room: String) throws(SQLiteError) -> Bool {
        var member = false
        try database.query("SELECT 1 FROM room_members WHERE room = ? AND user = ?", [.text(room), .text(user)]) { _ in member = true }
        return member
    }

    private func recipients(of message: IMMessage, from sender: String) throws(SQLiteError) -> [String] {
        switch message.recipient {
        case .user(let name):
            return name == sender ? [] : [name]
        case .room(let name):
            var members: [String] = []
            try database.query("SELECT user FROM room_members WHERE room = ? AND user != ? ORDER BY user", [.text(name), .text(sender)]) { row in
                if let user = row.text(0) { members.append(user) }
            }
            return members
        }
    }

    private static func message(from row: SQLiteDatabase.Row) -> IMMessage {
        // Every row has one of to_user and to_room (a message without a recipient is never stored).
        let recipient: IMRecipient = row.text(3).map { .user($0) } ?? row.text(4).map { .room($0) } ?? .user("")
        return IMMessage(
            id: row.text(2) ?? "", from: row.text(1) ?? "", recipient: recipient, text: row.text(5) ?? "",
            seq: UInt64(row.integer(0)), sentAtMilliseconds: UInt64(row.integer(6)))
    }
}
