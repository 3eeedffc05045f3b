public import RunLoopChat
public import RunLoopIMCore
import RunLoopPostgres

/// What a cluster node reads besides a user's inbox: a stretch of one conversation (a gap its bus
/// left) and the rooms a user is in (which room messages its sessions get).
extension PostgresChatStore {
    /// The messages of `conversation` numbered strictly between `after` and `before`, in
    /// `conversationSeq` order: one read along the (conversation, conversation_seq) key. Loop thread
    /// only; `completion` runs there once.
    public func messages(
        in conversation: IMConversation, after: UInt64, before: UInt64, completion: @escaping (Result<[IMMessage], IMStoreFailure>) -> Void
    ) {
        let key = conversation.storageKey
        guard after < before, PostgresText.isStorable(key) else { return completion(.success([])) }
        let statement = PostgresStatement(
            """
            SELECT \(StoredMessage.columns) FROM conversations c JOIN messages m ON m.conversation_id = c.id
            WHERE c.key = $1 AND m.conversation_seq > $2 AND m.conversation_seq < $3 ORDER BY m.conversation_seq
            """, [key, String(Int64(clamping: after)), String(Int64(clamping: before))])
        query(statement, "messages \(after)<…<\(before) of \(conversation)") { result in
            completion(result.map(StoredMessage.messages))
        }
    }

    /// The users who share a room of at most `maximumRoomMembers` members or a direct conversation
    /// with `user`, each once, in name order (`ChatStore`'s `contacts(of:roomsOfAtMost:completion:)`).
    /// Whether a room is larger is one look at its members index at that offset, not a count of the
    /// room. Loop thread only; `completion` runs there once.
    public func contacts(of user: String, roomsOfAtMost maximumRoomMembers: Int, completion: @escaping (Result<[String], IMStatusCode>) -> Void) {
        guard PostgresText.isStorable(user) else { return completion(.success([])) }
        let statement = PostgresStatement(
            """
            SELECT DISTINCT other."user" FROM members mb JOIN members other ON other.conversation_id = mb.conversation_id
            WHERE mb."user" = $1 AND other."user" <> mb."user"
              AND (SELECT 1 FROM members n WHERE n.conversation_id = mb.conversation_id OFFSET $2::bigint LIMIT 1) IS NULL
            ORDER BY other."user"
            """, [user, String(max(0, maximumRoomMembers))])
        query(statement, "contacts of \(user)") { result in
            completion(result.mapError { _ in .internalError }.map { rows in (0..<rows.count).compactMap { rows[$0, 0] } })
        }
    }

    /// ``contacts(of:roomsOfAtMost:completion:)`` of each of `users`, in their order, in one statement
    /// (`ChatStore`'s `contacts(ofEach:roomsOfAtMost:completion:)`): the members of every conversation
    /// one of them is in that is not larger than `maximumRoomMembers` (its kept `member_count`, one
    /// row per conversation), each conversation once however many of the users share it, assembled
    /// per user here. A room's crowd leaving together is one read of the room, not one join of it per
    /// leaver. One user alone is ``contacts(of:roomsOfAtMost:completion:)``'s statement. Loop thread only; `completion` runs there once; a failure fails all.
    public func contacts(
        ofEach users: [String], roomsOfAtMost maximumRoomMembers: Int, completion: @escaping (Result<[[String]], IMStatusCode>) -> Void
    ) {
        // A name PostgreSQL cannot hold is in no conversation: asked for nothing, answered none.
        let asked = users.filter { PostgresText.isStorable($0) }
        guard !asked.isEmpty else { return completion(.success(users.map { _ in [] })) }
        // One user: the per-user statement's rows are the answer as they come, with no assembly here
        // (the batch's costs twice the client CPU for one user: pg-audience-bench, --batch 1).
        if asked.count == 1, users.count == 1 {
            return contacts(of: asked[0], roomsOfAtMost: maximumRoomMembers) { completion($0.map { [$0] }) }
        }
        let statement = PostgresStatement(
            Self.conversationMembersSQL, [PostgresText.array(asked), String(Int64(clamping: max(0, maximumRoomMembers)))])
        query(statement, "contacts of \(users.count) users") { result in
            completion(result.mapError { _ in .internalError }.map { ConversationMembers(rows: $0, of: users).contacts(ofEach: users) })
        }
    }

    /// Every member of each conversation one of the users `$1` is in with at most `$2` members: rows
    /// of (conversation, member), a conversation's rows together in member order (the members
    /// index). A larger room costs its one `conversations` row, however big it grows.
    static let conversationMembersSQL = """
        SELECT o.conversation_id, o."user"
        FROM (SELECT DISTINCT mb.conversation_id FROM members mb WHERE mb."user" = ANY($1::text[])) AS asked
        JOIN conversations c ON c.id = asked.conversation_id AND c.member_count <= $2::bigint
        JOIN members o ON o.conversation_id = asked.conversation_id
        ORDER BY o.conversation_id, o."user"
        """

    /// The members of `room` with their joins' numbers, in name order (`ChatStore`'s
    /// `members(ofRoom:completion:)`). Loop thread only; `completion` runs there once.
    public func members(ofRoom room: String, completion: @escaping (Result<[RoomMember], IMStatusCode>) -> Void) {
        guard PostgresText.isStorable(room) else { return completion(.success([])) }
        let statement = PostgresStatement(
            """
            SELECT mb."user", mb.joined_seq FROM conversations c JOIN members mb ON mb.conversation_id = c.id
            WHERE c.key = $1 ORDER BY mb."user"
            """, [IMConversation.room(room).storageKey])
        query(statement, "members of \(room)") { result in
            completion(
                result.mapError { _ in .internalError }.map { rows in
                    (0..<rows.count).compactMap { row in
                        rows[row, 0].map { RoomMember(name: $0, joinedSeq: UInt64(clamping: rows.int(row, 1) ?? 0)) }
                    }
                })
        }
    }

    /// The rooms `user` is a member of: each room's name → the number of the join that made them a
    /// member (``RoomMember/joinedSeq``; 0 from before the store numbered changes) and the room's
    /// membership number at this read. Loop thread only; `completion` runs there once.
    public func rooms(of user: String, completion: @escaping (Result<[String: RoomJoin], IMStoreFailure>) -> Void) {
        guard PostgresText.isStorable(user) else { return completion(.success([:])) }
        let statement = PostgresStatement(
            """
            SELECT c.room, mb.joined_seq, c.membership_seq FROM members mb JOIN conversations c ON c.id = mb.conversation_id
            WHERE mb."user" = $1 AND c.room IS NOT NULL
            """, [user])
        query(statement, "rooms of \(user)") { result in
            completion(
                result.map { rows in
                    // One member row per (user, conversation): a room's name comes once.
                    Dictionary(
                        (0..<rows.count).compactMap { row in
                            rows[row, 0].map {
                                ($0, RoomJoin(joinedSeq: UInt64(clamping: rows.int(row, 1) ?? 0), roomSeq: UInt64(clamping: rows.int(row, 2) ?? 0)))
                            }
                        },
                        uniquingKeysWith: { first, _ in first })
                })
        }
    }
}
