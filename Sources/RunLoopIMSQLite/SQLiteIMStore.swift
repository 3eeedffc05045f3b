public import Logging
public import RunLoopChat
public import RunLoopIM
public import RunLoopIMCore

/// An `IMServerStore` and `ChatStore` in one SQLite file (WAL mode), in the schema the PostgreSQL store
/// shares (`SQLiteIMStore+Schema.swift`): conversations with their last sequence, messages numbered in
/// their conversation, one cursor per (member, conversation), abandoned ids, the users seen. Every rule
/// of the protocol's delivery guarantee is a constraint or a transaction here, so it holds across a
/// crash of the server process:
/// - (sender, client id) is UNIQUE: a resend finds the first row and gets its seq back;
/// - an abandoned (sender, id) has its own row, checked before storing;
/// - a message gets its conversationSeq from its conversation's row in the transaction that stores
///   it, committed before SEND_ACK goes out: one row however many members a room has;
/// - a member's inbox is the conversation past their cursor, which moves only on their DELIVER_ACK
///   (or their own message, when they were caught up).
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
    /// Conversations' members as last read, while the database is unchanged (SQLiteIMStore+Contacts).
    var conversationMembers = ConversationMembers()

    /// Opens or creates the store at `path` (":memory:" for a throwaway one), upgrading a file of an
    /// older schema in one transaction. Another program's SQLite file is refused unwritten (``admit(_:)``).
    /// - Throws: the file cannot be opened, is not the store's, or its schema is newer than this code knows.
    public init(
        path: String, accounts: [String: String]? = nil, durability: SQLiteDatabase.Durability = .processCrash,
        logger: Logger = Logger(label: "RunLoopIM.sqlite")
    ) throws(SQLiteError) {
        database = try SQLiteDatabase(path: path, durability: durability, admit: Self.admit)
        self.accounts = accounts
        self.logger = logger
        requiresKnownRecipients = accounts != nil
        try prepareSchema()
        for user in accounts?.keys.sorted() ?? [] { try database.query("INSERT OR IGNORE INTO users(name) VALUES (?)", [.text(user)]) }
    }

    // MARK: Rooms

    public func join(room: String, user: String, maximumRooms: Int?) -> Result<MembershipCommit, IMStatusCode> {
        guard RoomName.isValid(room) else { return .failure(.badRequest) }
        if let maximumRooms {
            do {
                var rooms = 0
                try database.query(
                    "SELECT count(*) FROM members mb JOIN conversations c ON c.id = mb.conversation_id WHERE mb.user = ? AND c.room IS NOT NULL",
                    [.text(user)]
                ) { row in rooms = Int(row.integer(0)) }
                if rooms >= maximumRooms, try !isMember(user, of: .room(room)) { return .failure(.tooManyRooms) }
            } catch {
                logger.error("rooms of \(user) not counted: \(error)")
                return .failure(.internalError)
            }
        }
        return roomChange(room, user) { () throws(SQLiteError) in
            let key = IMConversation.room(room).storageKey
            try database.query("INSERT OR IGNORE INTO conversations(key, room) VALUES (?, ?)", [.text(key), .text(room)])
            try database.query(Self.nextMembershipSeqSQL, [.text(key)])
            // From the room's last message on: older ones are history, not deliveries. A member
            // already in keeps their join's number.
            try database.query(
                """
                INSERT OR IGNORE INTO members(user, conversation_id, acked_through, joined_seq)
                SELECT ?, id, last_seq, membership_seq FROM conversations WHERE key = ?
                """,
                [.text(user), .text(key)])
        }
    }

    public func leave(room: String, user: String) -> Result<MembershipCommit, IMStatusCode> {
        do {
            guard try isMember(user, of: .room(room)) else { return .failure(.notAMember) }
        } catch {
            logger.error("membership of \(user) in \(room) not read: \(error)")
            return .failure(.internalError)
        }
        return roomChange(room, user) { () throws(SQLiteError) in
            let key = IMConversation.room(room).storageKey
            try database.query(
                "DELETE FROM members WHERE user = ? AND conversation_id = (SELECT id FROM conversations WHERE key = ?)", [.text(user), .text(key)])
            try database.query(Self.nextMembershipSeqSQL, [.text(key)])
        }
    }

    public func rooms(for user: String, after: String, limit: Int) -> Result<[Room], IMStatusCode> {
        var rooms: [Room] = []
        do {
            try database.query(
                Self.roomListSQL, [.text(user), .text(after), .integer(Int64(clamping: limit))]
            ) { row in
                rooms.append(Room(name: row.text(0) ?? "", members: Int(row.integer(1)), isMember: row.integer(2) != 0))
            }
        } catch {
            logger.error("rooms not listed: \(error)")
            return .failure(.internalError)
        }
        return .success(rooms)
    }

    /// A page of rooms that have members, each with its kept count and whether the user is one of them:
    /// per room one row of `conversations` and one primary-key probe of `members`, whatever the room's size.
    package static let roomListSQL = """
        SELECT c.room, c.member_count, EXISTS (SELECT 1 FROM members WHERE user = ?1 AND conversation_id = c.id)
        FROM conversations c WHERE c.room IS NOT NULL AND c.room > ?2 AND c.member_count > 0 ORDER BY c.room LIMIT ?3
        """

    /// A room's kept member count, whether the user is in it and the change's number, after a JOIN or
    /// LEAVE: one row and one primary-key probe, not a count of the room.
    package static let roomSummarySQL = """
        SELECT c.member_count, EXISTS (SELECT 1 FROM members WHERE user = ?1 AND conversation_id = c.id), c.membership_seq
        FROM conversations c WHERE c.key = ?2
        """

    /// Numbers a JOIN or LEAVE of the room keyed `?`: the next of its membership order, in the
    /// change's transaction, which the summary then reads back.
    static let nextMembershipSeqSQL = "UPDATE conversations SET membership_seq = membership_seq + 1 WHERE key = ?"

    public func members(ofRoom room: String) -> Result<[RoomMember], IMStatusCode> {
        var members: [RoomMember] = []
        do {
            try database.query(
                "SELECT mb.user, mb.joined_seq FROM conversations c JOIN members mb ON mb.conversation_id = c.id WHERE c.key = ? ORDER BY mb.user",
                [.text(IMConversation.room(room).storageKey)]
            ) { row in
                if let name = row.text(0) { members.append(RoomMember(name: name, joinedSeq: UInt64(clamping: row.integer(1)))) }
            }
        } catch {
            logger.error("members of \(room) not read: \(error)")
            return .failure(.internalError)
        }
        return .success(members)
    }

    public func history(_ query: HistoryQuery, for user: String, limit: Int) -> Result<HistoryPage, IMStatusCode> {
        let before = Int64(clamping: query.before == 0 ? UInt64(Int64.max) : query.before)
        do {
            let place: IMConversation
            switch query.conversation {
            case .room(let room):
                guard try isMember(user, of: .room(room)) else { return .failure(.notAMember) }
                place = .room(room)
            case .user(let other):
                place = .direct(between: user, and: other)
            }
            var messages: [ChatMessage] = []
            try database.query(
                """
                SELECT \(Self.messageColumns) FROM messages m
                WHERE m.conversation_id = (SELECT id FROM conversations WHERE key = ?) AND m.seq < ? ORDER BY m.seq DESC LIMIT ?
                """, [.text(place.storageKey), .integer(before), .integer(Int64(limit) + 1)]
            ) { row in messages.append(Self.message(from: row)) }
            let more = messages.count > limit
            if more { messages.removeLast() }
            return .success(HistoryPage(messages: messages, moreAvailable: more))
        } catch {
            logger.error("history for \(user) not read: \(error)")
            return .failure(.internalError)
        }
    }

    private func roomChange(_ room: String, _ user: String, _ change: () throws(SQLiteError) -> Void) -> Result<MembershipCommit, IMStatusCode> {
        do {
            var info = MembershipCommit(room: Room(name: room, members: 0, isMember: false), seq: 0)
            try database.transaction { () throws(SQLiteError) in
                try change()
                try database.query(Self.roomSummarySQL, [.text(user), .text(IMConversation.room(room).storageKey)]) { row in
                    info = MembershipCommit(
                        room: Room(name: room, members: Int(row.integer(0)), isMember: row.integer(1) != 0), seq: UInt64(clamping: row.integer(2)))
                }
            }
            return .success(info)
        } catch {
            logger.error("room \(room) not changed for \(user): \(error)")
            return .failure(.internalError)
        }
    }

    // MARK: Messages

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
        do {
            return try database.transaction { () throws(SQLiteError) -> IMStoreResult in
                if let earlier = try find(sender: sender, id: message.id) {
                    return .stored(earlier, recipients: try members(waitingFor: earlier), isNew: false)
                }
                var abandoned = false
                try database.query("SELECT 1 FROM abandoned WHERE sender = ? AND client_id = ?", [.text(sender), .text(message.id)]) { _ in
                    abandoned = true
                }
                if abandoned { return .refused(.badRequest) }
                switch message.recipient {
                case .user(let name):
                    guard try isKnown(name) else { return .refused(.unknownRecipient) }
                case .room(let name):
                    guard try isMember(sender, of: .room(name)) else { return .refused(.unknownRecipient) }
                }
                let stored = try insert(message, from: sender, nowMilliseconds: nowMilliseconds)
                return .stored(stored, recipients: try members(receiving: stored), isNew: true)
            }
        } catch {
            logger.error("message \(message.id) from \(sender) not stored: \(error)")
            return .refused(.internalError)
        }
    }

    /// Numbers and inserts a new message inside the caller's transaction: the conversation's row first
    /// (its `last_seq` is the number, and the write serialises senders), then the message, the members
    /// a direct conversation's first message brings, and the sender's own cursor.
    private func insert(_ message: IMMessage, from sender: String, nowMilliseconds: UInt64) throws(SQLiteError) -> IMMessage {
        var stored = message
        stored.from = sender
        stored.sentAtMilliseconds = nowMilliseconds
        let place = stored.conversation
        let (toUser, toRoom): (SQLiteDatabase.Value, SQLiteDatabase.Value)
        switch stored.recipient {
        case .user(let name): (toUser, toRoom) = (.text(name), .null)
        case .room(let name): (toUser, toRoom) = (.null, .text(name))
        }
        var conversationID: Int64 = 0
        try database.query(
            """
            INSERT INTO conversations(key, room, last_seq) VALUES (?, ?, 1)
            ON CONFLICT(key) DO UPDATE SET last_seq = last_seq + 1 RETURNING id, last_seq
            """, [.text(place.storageKey), toRoom]
        ) { row in
            conversationID = row.integer(0)
            stored.conversationSeq = UInt64(row.integer(1))
        }
        let number = Int64(stored.conversationSeq)
        try database.query(
            """
            INSERT INTO messages(conversation_id, conversation_seq, sender, client_id, to_user, to_room, text, sent_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .integer(conversationID), .integer(number), .text(sender), .text(message.id), toUser, toRoom, .text(stored.text),
                .integer(Int64(nowMilliseconds))
            ])
        stored.seq = UInt64(database.lastInsertedRowID)
        if case .user(let name) = stored.recipient {
            for member in [sender, name] {
                try database.query(
                    "INSERT OR IGNORE INTO members(user, conversation_id, acked_through) VALUES (?, ?, 0)", [.text(member), .integer(conversationID)])
            }
        }
        // A sender caught up with the conversation stays caught up: their own message is no backlog.
        try database.query(
            "UPDATE members SET acked_through = ?3 WHERE user = ?1 AND conversation_id = ?2 AND acked_through = ?3 - 1",
            [.text(sender), .integer(conversationID), .integer(number)])
        return stored
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

    /// The conversations of a user with something past their cursor, in id order, with where the
    /// cursor and the conversation are: one index range of `members` and a row of `conversations` each.
    package static let conversationsBehindSQL = """
        SELECT mb.conversation_id, c.key, mb.acked_through, c.last_seq FROM members mb JOIN conversations c ON c.id = mb.conversation_id
        WHERE mb.user = ? AND c.last_seq > mb.acked_through ORDER BY mb.conversation_id
        """

    /// Others' messages of one conversation past a number, in order: one index range of `messages`.
    package static let conversationMessagesSQL = """
        SELECT \(messageColumns) FROM messages m
        WHERE m.conversation_id = ? AND m.conversation_seq > ? AND m.sender <> ? ORDER BY m.conversation_seq LIMIT ?
        """

    public func undelivered(for user: String, after: [IMConversation: UInt64], limit: Int) -> Result<[IMMessage], IMStoreFailure> {
        var messages: [IMMessage] = []
        guard limit > 0 else { return .success(messages) }
        // `after` by storage key: the rows carry the key, not the value.
        var sent: [String: UInt64] = [:]
        for (place, through) in after { sent[place.storageKey] = through }
        do {
            var behind: [(id: Int64, from: Int64)] = []
            try database.query(Self.conversationsBehindSQL, [.text(user)]) { row in
                let from = max(row.integer(2), Int64(clamping: sent[row.text(1) ?? ""] ?? 0))
                if from < row.integer(3) { behind.append((row.integer(0), from)) }
            }
            for conversation in behind where messages.count < limit {
                try database.query(
                    Self.conversationMessagesSQL,
                    [.integer(conversation.id), .integer(conversation.from), .text(user), .integer(Int64(clamping: limit - messages.count))]
                ) { row in messages.append(Self.message(from: row)) }
            }
        } catch {
            logger.error("inbox of \(user) not read: \(error)")
            return .failure(IMStoreFailure("read the inbox of \(user)", reason: "\(error)"))
        }
        return .success(messages)
    }

    public func acknowledge(_ seqs: [UInt64], for user: String) {
        acknowledge([user: seqs])
    }

    /// Every user's acknowledgements in one transaction (one commit for a loop pass's worth): per user
    /// and conversation, the cursor moves once, to the highest number acknowledged. Each message's
    /// place is looked up once per batch: a room's members acknowledge the same messages in the same
    /// pass, so a room of N would otherwise make N lookups of each.
    public func acknowledge(_ seqsByUser: [String: [UInt64]]) {
        var places: [Int64: (conversation: Int64, number: Int64)?] = [:]
        do {
            try database.transaction { () throws(SQLiteError) in
                for (user, seqs) in seqsByUser {
                    var through: [Int64: Int64] = [:]
                    // Client input: a seq past Int64.max names no stored message (SQLite's rowids are
                    // signed), and converting it would trap and take the node down.
                    for seq in seqs {
                        guard let key = Int64(exactly: seq) else { continue }
                        let place: (conversation: Int64, number: Int64)?
                        if let known = places[key] {
                            place = known
                        } else {
                            place = try self.place(ofMessage: key)
                            places[key] = place
                        }
                        guard let place else { continue }
                        through[place.conversation] = max(through[place.conversation] ?? 0, place.number)
                    }
                    for (conversation, number) in through {
                        try database.query(Self.moveCursorSQL, [.text(user), .integer(conversation), .integer(number)])
                    }
                }
            }
        } catch {
            // Harmless: the messages come again at the next login and the client drops duplicates.
            logger.error("acknowledgements from \(seqsByUser.keys.sorted().joined(separator: ", ")) not recorded: \(error)")
        }
    }

    /// A message's conversation and number: one rowid lookup. (An UPDATE … FROM a subquery instead
    /// made SQLite build and drop a temporary table for every acknowledgement, most of a delivery's cost.)
    package static let placeOfMessageSQL = "SELECT conversation_id, conversation_seq FROM messages WHERE seq = ?"

    /// The conversation and number of the message `seq`; `nil`: no such message (deleted, or never).
    private func place(ofMessage seq: Int64) throws(SQLiteError) -> (conversation: Int64, number: Int64)? {
        var place: (conversation: Int64, number: Int64)?
        try database.query(Self.placeOfMessageSQL, [.integer(seq)]) { row in place = (row.integer(0), row.integer(1)) }
        return place
    }

    /// A member's cursor up to a number, never back: one primary-key lookup.
    package static let moveCursorSQL = "UPDATE members SET acked_through = ?3 WHERE user = ?1 AND conversation_id = ?2 AND acked_through < ?3"

    /// Messages stored in all, for tests and summaries.
    public func storedCount() throws(SQLiteError) -> Int {
        var count = 0
        try database.query("SELECT count(*) FROM messages") { row in count = Int(row.integer(0)) }
        return count
    }

    // MARK: Reading

    static let messageColumns = "m.seq, m.sender, m.client_id, m.to_user, m.to_room, m.text, m.sent_at_ms, m.conversation_seq"

    private func find(sender: String, id: String) throws(SQLiteError) -> IMMessage? {
        var found: IMMessage?
        try database.query("SELECT \(Self.messageColumns) FROM messages m WHERE m.sender = ? AND m.client_id = ?", [.text(sender), .text(id)]) {
            row in found = Self.message(from: row)
        }
        return found
    }

    /// The members of a new message's conversation but its sender: none can have acknowledged it
    /// yet (a cursor only reaches numbers stored before), so one read of the conversation's index,
    /// with no look-up of each member's cursor row — a room of N pays N of those per message otherwise.
    package static let newMessageRecipientsSQL = "SELECT user FROM members WHERE conversation_id = ? AND user <> ? ORDER BY user"

    private func members(receiving message: IMMessage) throws(SQLiteError) -> [String] {
        guard let place = try place(ofMessage: Int64(clamping: message.seq)) else { return [] }
        var members: [String] = []
        try database.query(Self.newMessageRecipientsSQL, [.integer(place.conversation), .text(message.from)]) { row in
            if let user = row.text(0) { members.append(user) }
        }
        return members
    }

    /// The members of a stored message's conversation, but its sender, who have not acknowledged it.
    private func members(waitingFor message: IMMessage) throws(SQLiteError) -> [String] {
        var members: [String] = []
        try database.query(
            """
            SELECT mb.user FROM messages m JOIN members mb ON mb.conversation_id = m.conversation_id
            WHERE m.seq = ? AND mb.user <> m.sender AND mb.acked_through < m.conversation_seq ORDER BY mb.user
            """, [.integer(Int64(message.seq))]
        ) { row in if let user = row.text(0) { members.append(user) } }
        return members
    }

    private func isKnown(_ user: String) throws(SQLiteError) -> Bool {
        guard requiresKnownRecipients else { return true }
        var known = false
        try database.query("SELECT 1 FROM users WHERE name = ?", [.text(user)]) { _ in known = true }
        return known
    }

    private func isMember(_ user: String, of place: IMConversation) throws(SQLiteError) -> Bool {
        var member = false
        try database.query(
            "SELECT 1 FROM members mb JOIN conversations c ON c.id = mb.conversation_id WHERE c.key = ? AND mb.user = ?",
            [.text(place.storageKey), .text(user)]
        ) { _ in member = true }
        return member
    }

    private static func message(from row: SQLiteDatabase.Row) -> IMMessage {
        // Every row has one of to_user and to_room (a message without a recipient is never stored).
        let recipient: IMRecipient = row.text(3).map { .user($0) } ?? row.text(4).map { .room($0) } ?? .user("")
        return IMMessage(
            id: row.text(2) ?? "", from: row.text(1) ?? "", recipient: recipient, text: row.text(5) ?? "",
            seq: UInt64(row.integer(0)), sentAtMilliseconds: UInt64(row.integer(6)), conversationSeq: UInt64(row.integer(7)))
    }
}
