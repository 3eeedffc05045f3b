import RunLoopIM
import RunLoopIMCore
import RunLoopPostgres

/// One SEND as ``PostgresChatStore`` stores it: the statements of its transaction, and what their
/// rows mean. A value, so the race's read-back reuses the same statements and decision.
struct Send {
    let message: IMMessage
    let sender: String
    let now: Int64
    let requiresKnownRecipient: Bool

    /// Whether the transaction failed because another one stored the same (sender, id) first: the
    /// unique key its insert waited on.
    static func isRace(_ error: PostgresError) -> Bool {
        guard case .server(let error) = error else { return false }
        return error.sqlState == PostgresServerError.uniqueViolation && error.constraint == "messages_sender_client_id_key"
    }

    /// The advisory lock key of (sender, id), as SQL over two text expressions: the sender's length
    /// first, so no two pairs make the same text.
    static func lockKey(_ sender: String, _ id: String) -> String {
        "hashtextextended(octet_length(\(sender)::text)::text || ':' || \(sender)::text || \(id)::text, 0)"
    }

    private var conversation: IMConversation { IMConversation(from: sender, to: message.recipient) }
    private var toUser: String? { if case .user(let name) = message.recipient { name } else { nil } }
    private var toRoom: String? { if case .room(let name) = message.recipient { name } else { nil } }

    /// Lock, create the direct conversation, store, read back. The last three statements' rows are
    /// what ``outcome(inserted:found:waiting:)`` takes.
    var statements: [PostgresStatement] {
        let key = conversation.storageKey
        var statements = [PostgresStatement("SELECT pg_advisory_xact_lock(\(Self.lockKey("$1", "$2")))", [sender, message.id])]
        if toUser != nil {
            // A direct conversation starts with its first message (a room's with its first member).
            statements.append(
                PostgresStatement(
                    """
                    INSERT INTO conversations(key) SELECT $1::text
                    WHERE NOT EXISTS (SELECT 1 FROM conversations WHERE key = $1)
                      AND (NOT $2::boolean OR EXISTS (SELECT 1 FROM users WHERE name = $3))
                    ON CONFLICT (key) DO NOTHING
                    """, [key, PostgresText.bool(requiresKnownRecipient), toUser]))
        }
        statements.append(
            PostgresStatement(
                """
                WITH target AS (
                    SELECT c.id FROM conversations c
                    WHERE c.key = $3
                      AND NOT EXISTS (SELECT 1 FROM messages WHERE sender = $1 AND client_id = $2)
                      AND NOT EXISTS (SELECT 1 FROM abandoned WHERE sender = $1 AND client_id = $2)
                      AND CASE WHEN $5::text IS NOT NULL
                          THEN EXISTS (SELECT 1 FROM members WHERE "user" = $1 AND conversation_id = c.id)
                          ELSE NOT $8::boolean OR EXISTS (SELECT 1 FROM users WHERE name = $4::text) END
                ), bumped AS (
                    UPDATE conversations c SET last_seq = c.last_seq + 1 FROM target t WHERE c.id = t.id RETURNING c.id, c.last_seq
                ), inserted AS (
                    INSERT INTO messages(conversation_id, conversation_seq, sender, client_id, to_user, to_room, text, sent_at_ms)
                    SELECT id, last_seq, $1::text, $2::text, $4::text, $5::text, $6::text, $7::bigint FROM bumped RETURNING conversation_id, conversation_seq
                ), recipient_joins AS (
                    INSERT INTO members("user", conversation_id, acked_through)
                    SELECT $4::text, conversation_id, 0 FROM inserted WHERE $4::text <> $1 ON CONFLICT DO NOTHING
                ), own_direct_cursor AS (
                    INSERT INTO members("user", conversation_id, acked_through)
                    SELECT $1::text, conversation_id, conversation_seq FROM inserted WHERE $4::text IS NOT NULL
                    ON CONFLICT ("user", conversation_id) DO UPDATE SET acked_through = excluded.acked_through
                    WHERE members.acked_through = excluded.acked_through - 1
                ), own_room_cursor AS (
                    UPDATE members mb SET acked_through = i.conversation_seq FROM inserted i
                    WHERE $5::text IS NOT NULL AND mb."user" = $1 AND mb.conversation_id = i.conversation_id
                      AND mb.acked_through = i.conversation_seq - 1
                )
                SELECT count(*) FROM inserted
                """,
                [sender, message.id, key, toUser, toRoom, message.text, String(now), PostgresText.bool(requiresKnownRecipient)]))
        return statements + readStatements
    }

    /// The stored row of (sender, id) with its room's membership number (read after the message's own
    /// insert, under the room row's lock, so for a new message it is the number at its commit: every
    /// JOIN and LEAVE numbered at or below it committed before the message, every later one after)
    /// and whether the id is abandoned, then the members it waits for:
    /// those but the sender whose cursor is below it — every other member for a new message, those
    /// who have not acknowledged it for a resend (as the other stores answer).
    var readStatements: [PostgresStatement] {
        [
            PostgresStatement(
                """
                SELECT \(StoredMessage.columns),
                    (SELECT c.membership_seq FROM conversations c WHERE c.id = m.conversation_id AND m.to_room IS NOT NULL) AS membership_seq,
                    EXISTS (SELECT 1 FROM abandoned WHERE sender = $1 AND client_id = $2) AS abandoned
                FROM (SELECT 1) AS one LEFT JOIN messages m ON m.sender = $1 AND m.client_id = $2
                """, [sender, message.id]),
            PostgresStatement(
                """
                SELECT mb."user" FROM messages m JOIN members mb ON mb.conversation_id = m.conversation_id
                WHERE m.sender = $1 AND m.client_id = $2 AND mb."user" <> $1 AND mb.acked_through < m.conversation_seq
                ORDER BY mb."user"
                """, [sender, message.id])
        ]
    }

    /// The room's membership number in the stored row `found` (``readStatements``); `nil` for a direct
    /// message or no row.
    static func membershipSeq(_ found: PostgresRows) -> UInt64? {
        guard found.count > 0 else { return nil }
        return found[0, "membership_seq"].flatMap { UInt64($0) }
    }

    /// What the SEND is answered: the stored row (new or earlier), else refused — for good, since
    /// an abandoned id or a recipient refused now is no temporary state the client could wait out.
    func outcome(inserted: Bool, found: PostgresRows, waiting: PostgresRows) -> IMStoreResult {
        if let stored = StoredMessage.message(found, 0) {
            return .stored(stored, recipients: (0..<waiting.count).compactMap { waiting[$0, 0] }, isNew: inserted)
        }
        if found.bool(0, found.columns.count - 1) == true { return .refused(.badRequest) }
        return .refused(.unknownRecipient)
    }
}
