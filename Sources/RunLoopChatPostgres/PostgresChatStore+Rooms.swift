public import RunLoopChat
import RunLoopIM
public import RunLoopIMCore
import RunLoopPostgres

extension PostgresChatStore {
    /// Puts `user` in `room`, creating it, in one transaction. The new member's cursor starts at the
    /// room's last message: what came before shows in history, never as deliveries. Joining twice is
    /// not an error; a user already in `maximumRooms` rooms (when set) may not join another
    /// (`tooManyRooms`); a name that is not a valid `RoomName`: `badRequest`. The change is numbered
    /// under the room row's lock, held to the commit, so numbers follow commit order across nodes.
    /// Loop thread only; `completion` runs there once.
    public func join(room: String, user: String, maximumRooms: Int?, completion: @escaping (Result<MembershipCommit, IMStatusCode>) -> Void) {
        guard RoomName.isValid(room), PostgresText.isStorable(user) else { return completion(.failure(.badRequest)) }
        let key = IMConversation.room(room).storageKey
        // ON CONFLICT with no target: a room row is unique by `key` and by `room`, and two nodes creating
        // it at once may meet on either index (naming one, the other raised 23505 to the later JOIN).
        let statements = [
            PostgresStatement(
                """
                INSERT INTO conversations(key, room) SELECT $1::text, $2::text
                WHERE NOT EXISTS (SELECT 1 FROM conversations WHERE key = $1) ON CONFLICT DO NOTHING
                """, [key, room]),
            nextMembershipSeq(key, user, maximumRooms),
            // A member already in keeps their join's number.
            PostgresStatement(
                """
                INSERT INTO members("user", conversation_id, acked_through, joined_seq)
                SELECT $2::text, c.id, c.last_seq, c.membership_seq FROM conversations c
                WHERE c.key = $1 AND ($3::bigint IS NULL OR (
                    SELECT count(*) FROM members mb JOIN conversations r ON r.id = mb.conversation_id
                    WHERE mb."user" = $2 AND r.room IS NOT NULL) < $3)
                ON CONFLICT DO NOTHING
                """, [key, user, maximumRooms.map(String.init)]),
            summary(key, user)
        ]
        transaction(statements, "join of \(room) by \(user)") { result in
            completion(
                result.mapError { _ in .internalError }.flatMap { rows in
                    let joined = Self.commit(room, rows[3])
                    return joined.room.isMember ? .success(joined) : .failure(.tooManyRooms)
                })
        }
    }

    /// Takes `user` out of `room` in one transaction (`notAMember` if they were not in it), numbered
    /// as a join is. Loop thread only; `completion` runs there once.
    public func leave(room: String, user: String, completion: @escaping (Result<MembershipCommit, IMStatusCode>) -> Void) {
        guard PostgresText.isStorable(room, user) else { return completion(.failure(.notAMember)) }
        let key = IMConversation.room(room).storageKey
        let statements = [
            // Numbered first, and only for a member: a refused LEAVE writes nothing.
            PostgresStatement(
                """
                UPDATE conversations c SET membership_seq = membership_seq + 1
                WHERE key = $1 AND EXISTS (SELECT 1 FROM members WHERE "user" = $2 AND conversation_id = c.id)
                """, [key, user]),
            PostgresStatement(
                "DELETE FROM members WHERE \"user\" = $2 AND conversation_id = (SELECT id FROM conversations WHERE key = $1)", [key, user]),
            summary(key, user)
        ]
        transaction(statements, "leave of \(room) by \(user)") { result in
            completion(
                result.mapError { _ in .internalError }.flatMap { rows in
                    rows[1].affectedRows == 1 ? .success(Self.commit(room, rows[2])) : .failure(.notAMember)
                })
        }
    }

    /// Whether `user` is a member of `room` and the number of the room's last JOIN or LEAVE, read
    /// together (one statement, one snapshot): every change of the room numbered up to it is in the
    /// answer, any later one committed after the read. A room that does not exist reads as no member
    /// at 0. Loop thread only; `completion` runs there once.
    public func standing(of user: String, inRoom room: String, completion: @escaping (Result<RoomStanding, IMStoreFailure>) -> Void) {
        guard PostgresText.isStorable(room, user) else { return completion(.success(RoomStanding(isMember: false, seq: 0))) }
        query(summary(IMConversation.room(room).storageKey, user), "standing of \(user) in \(room)") { result in
            completion(result.map { rows in RoomStanding(isMember: rows.bool(0, 1) == true, seq: UInt64(clamping: rows.int(0, 2) ?? 0)) })
        }
    }

    /// At most `limit` rooms with members whose names sort after `after` in UTF-8 byte order
    /// ("": from the first), in that order, as `user` sees them. Loop thread only; `completion` runs
    /// there once.
    public func rooms(for user: String, after: String, limit: Int, completion: @escaping (Result<[Room], IMStatusCode>) -> Void) {
        guard limit > 0, PostgresText.isStorable(user, after) else { return completion(.success([])) }
        let statement = PostgresStatement(
            """
            SELECT c.room, c.member_count AS members,
                EXISTS (SELECT 1 FROM members WHERE "user" = $1 AND conversation_id = c.id) AS is_member
            FROM conversations c WHERE c.room > $2 AND c.member_count > 0 ORDER BY c.room LIMIT $3
            """, [user, after, String(limit)])
        query(statement, "room list for \(user)") { result in
            completion(
                result.mapError { _ in .internalError }.map { rows in
                    (0..<rows.count).map { Room(name: rows[$0, 0] ?? "", members: rows.int($0, 1) ?? 0, isMember: rows.bool($0, 2) == true) }
                })
        }
    }

    /// A page of `user`'s conversation with a user, or in a room they are a member of (`notAMember`
    /// otherwise), newest first: at most `limit` messages with `seq` below the query's `before`
    /// (0: from the newest). One statement. Loop thread only; `completion` runs there once.
    public func history(
        _ query: HistoryQuery, for user: String, limit: Int, completion: @escaping (Result<HistoryPage, IMStatusCode>) -> Void
    ) {
        let conversation = IMConversation(from: user, to: query.conversation)
        guard PostgresText.isStorable(user, conversation.storageKey) else { return completion(.failure(.notAMember)) }
        let isRoom = if case .room = query.conversation { true } else { false }
        let before = query.before == 0 ? Int64.max : Int64(clamping: query.before)
        let statement = PostgresStatement(
            """
            SELECT g.allowed, \(StoredMessage.columns) FROM (
                SELECT c.id, (NOT $3::boolean OR EXISTS (SELECT 1 FROM members WHERE "user" = $2 AND conversation_id = c.id)) AS allowed
                FROM (SELECT 1) AS one LEFT JOIN conversations c ON c.key = $1
            ) AS g
            LEFT JOIN LATERAL (
                SELECT * FROM messages WHERE conversation_id = g.id AND g.allowed AND seq < $4 ORDER BY seq DESC LIMIT $5
            ) AS m ON true
            """, [conversation.storageKey, user, PostgresText.bool(isRoom), String(before), String(min(max(0, limit), Int.max - 1) + 1)])
        self.query(statement, "history of \(conversation) for \(user)") { result in
            completion(
                result.mapError { _ in .internalError }.flatMap { rows in
                    guard rows.bool(0, 0) == true else { return .failure(.notAMember) }
                    var messages = StoredMessage.messages(rows)
                    let more = messages.count > limit
                    if more { messages.removeLast() }
                    return .success(HistoryPage(messages: messages, moreAvailable: more))
                })
        }
    }

    /// The room's kept member count, whether `user` is one and the change's number ($1 its key, $2 the
    /// user): one row of `conversations` and one primary-key probe, whatever the room's size. One row
    /// even for no room.
    private func summary(_ key: String, _ user: String) -> PostgresStatement {
        PostgresStatement(
            """
            SELECT coalesce((SELECT member_count FROM conversations WHERE key = $1), 0) AS members,
                EXISTS (SELECT 1 FROM members mb JOIN conversations c ON c.id = mb.conversation_id
                        WHERE c.key = $1 AND mb."user" = $2) AS is_member,
                coalesce((SELECT membership_seq FROM conversations WHERE key = $1), 0) AS membership_seq
            """, [key, user])
    }

    /// Numbers a JOIN of the room keyed `key`: the next of its membership order. It takes the room
    /// row's lock (as a send's number does), so a later change of the room waits for this
    /// transaction's commit and gets a larger number; the summary reads it back. (A LEAVE's is its
    /// own statement, guarded by the membership it ends.)
    private func nextMembershipSeq(_ key: String, _ user: String, _ maximumRooms: Int?) -> PostgresStatement {
        // Not for a JOIN the room limit refuses: a number no node tells would hold the room's messages
        // on every cluster node until they give up waiting for it (docs/CLUSTER.md).
        PostgresStatement(
            """
            UPDATE conversations c SET membership_seq = membership_seq + 1
            WHERE key = $1 AND ($3::bigint IS NULL
                OR EXISTS (SELECT 1 FROM members WHERE "user" = $2 AND conversation_id = c.id)
                OR (SELECT count(*) FROM members mb JOIN conversations r ON r.id = mb.conversation_id
                    WHERE mb."user" = $2 AND r.room IS NOT NULL) < $3)
            """, [key, user, maximumRooms.map(String.init)])
    }

    private static func commit(_ name: String, _ summary: PostgresRows) -> MembershipCommit {
        MembershipCommit(
            room: Room(name: name, members: summary.int(0, 0) ?? 0, isMember: summary.bool(0, 1) == true),
            seq: UInt64(clamping: summary.int(0, 2) ?? 0))
    }
}
