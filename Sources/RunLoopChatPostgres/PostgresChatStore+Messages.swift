public import RunLoopIM
public import RunLoopIMCore
import RunLoopPostgres

extension PostgresChatStore {
    /// Stores a message from `sender` in one transaction and completes with what the IM server
    /// answers the SEND: `.stored` after the commit (`isNew` false for a resend, with the first
    /// `seq` and `conversationSeq`, naming only the recipients who have not acknowledged it yet);
    /// `.refused(.badRequest)` for an empty or abandoned id (or text PostgreSQL cannot hold: NUL);
    /// `.refused(.unknownRecipient)` for a room the sender is not in
    /// or, with ``requiresKnownRecipients``, a user never seen; `.refused(.internalError)` when the
    /// database did not confirm the commit — temporary: the client resends under the same id.
    ///
    /// The conversation's `UPDATE … RETURNING last_seq` locks its row until the commit, which
    /// serialises the senders of one conversation across every node: numbers are contiguous and in
    /// commit order per conversation, and `seq` (taken after the lock) rises with them. Before it,
    /// an advisory lock on (sender, id) serialises the store with a resend or an ABANDON of the same
    /// id on any node, so neither decides on a snapshot the other is about to change.
    /// Loop thread only; `completion` runs there once.
    public func store(
        _ message: IMMessage, from sender: String, nowMilliseconds: UInt64, completion: @escaping (IMStoreResult) -> Void
    ) {
        let texts = [sender, message.id, message.text] + message.recipient.names
        guard !message.id.isEmpty, PostgresText.isStorable(texts), let now = Int64(exactly: nowMilliseconds) else {
            return completion(.refused(.badRequest))
        }
        let send = Send(message: message, sender: sender, now: now, requiresKnownRecipient: requiresKnownRecipients)
        // Holds the store until the answer: the completion runs whatever happens meanwhile.
        transaction(send.statements, "message \(message.id) from \(sender)", expecting: Send.isRace) { result in
            switch result {
            case .success(let rows):
                let inserted = rows[rows.count - 3].int(0, 0) == 1
                let outcome = send.outcome(inserted: inserted, found: rows[rows.count - 2], waiting: rows[rows.count - 1])
                // Only a new message's number is the one at its commit (a resend reads the room's today).
                if inserted, case .stored(let stored, _, _) = outcome, let number = Send.membershipSeq(rows[rows.count - 2]) {
                    self.onRoomMessageCommitted?(stored, number)
                }
                completion(outcome)
            case .failure(let failure) where Send.isRace(failure):
                // Stored meanwhile by another transaction that the (sender, id) lock did not hold
                // back (a writer that does not take it): its row is the answer, as for any resend.
                self.readBack(send, completion: completion)
            case .failure:
                // Lost, uncertain (the commit may have landed) or refused: the client takes
                // internalError as temporary and resends under the same id, which is safe because
                // storing is idempotent per (sender, id).
                completion(.refused(.internalError))
            }
        }
    }

    private func readBack(_ send: Send, completion: @escaping (IMStoreResult) -> Void) {
        transaction(send.readStatements, "message \(send.message.id) from \(send.sender), read back") { result in
            guard case .success(let rows) = result else { return completion(.refused(.internalError)) }
            completion(send.outcome(inserted: false, found: rows[0], waiting: rows[1]))
        }
    }

    /// Settles ids `sender` gave up on, in one transaction: a stored one answers with its `seq`, the
    /// others are refused from now on (a SEND of one of them later: `.refused(.badRequest)`). One
    /// outcome per id, in order. Loop thread only; `completion` runs there once.
    public func abandon(
        _ ids: [String], from sender: String, completion: @escaping (Result<[IMAbandonOutcome], IMStoreFailure>) -> Void
    ) {
        guard !ids.isEmpty else { return completion(.success([])) }
        guard PostgresText.isStorable([sender] + ids) else {
            // Never stored, and no SEND of them can be: refused is already their fate.
            return completion(.success(ids.map { IMAbandonOutcome(id: $0, storedSeq: nil) }))
        }
        let list = PostgresText.array(ids)
        let statements = [
            // The same lock a SEND of the id takes: a store and an abandon of one id never pass each
            // other. Taken in key order (the lock calls run after the sort), so two abandons never
            // wait for each other in a cycle.
            PostgresStatement(
                "SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT \(Send.lockKey("$1", "id")) AS k FROM unnest($2::text[]) AS id) AS keys ORDER BY k",
                [sender, list]),
            PostgresStatement(
                """
                INSERT INTO abandoned(sender, client_id) SELECT $1::text, id FROM unnest($2::text[]) AS id
                WHERE NOT EXISTS (SELECT 1 FROM messages WHERE sender = $1 AND client_id = id) ON CONFLICT DO NOTHING
                """, [sender, list]),
            PostgresStatement(
                """
                SELECT a.id, m.seq FROM unnest($2::text[]) WITH ORDINALITY AS a(id, n)
                LEFT JOIN messages m ON m.sender = $1 AND m.client_id = a.id ORDER BY a.n
                """, [sender, list])
        ]
        transaction(statements, "abandon of \(ids.count) ids from \(sender)") { result in
            completion(
                result.map { rows in
                    let answers = rows[2]
                    return (0..<answers.count).map { IMAbandonOutcome(id: answers[$0, 0] ?? "", storedSeq: answers[$0, 1].flatMap { UInt64($0) }) }
                })
        }
    }

    /// At most `limit` undelivered messages of `user` — in conversations they are a member of,
    /// past their cursor, not their own — a conversation at a time (by conversation id) and in
    /// `conversationSeq` order within each, skipping in each conversation named in `after` what is
    /// at or below its number. One statement whose cost grows with `limit` and the user's
    /// conversations, never with the backlog (the members key and the messages'
    /// (conversation, conversation_seq) key lead every step). Loop thread only; `completion` runs there once.
    public func undelivered(
        for user: String, after: [IMConversation: UInt64], limit: Int,
        completion: @escaping (Result<[IMMessage], IMStoreFailure>) -> Void
    ) {
        guard limit > 0, PostgresText.isStorable(user) else { return completion(.success([])) }
        // A key PostgreSQL cannot hold names no stored conversation: nothing to skip there.
        let skips = after.map { ($0.key.storageKey, Int64(clamping: $0.value)) }.filter { PostgresText.isStorable($0.0) }
        let statement = Self.undeliveredStatement(
            user: user, afterKeys: skips.map(\.0), afterSeqs: skips.map(\.1), limit: limit)
        query(statement, "inbox read for \(user)") { result in
            completion(result.map(StoredMessage.messages))
        }
    }

    static func undeliveredStatement(user: String, afterKeys: [String], afterSeqs: [Int64], limit: Int) -> PostgresStatement {
        PostgresStatement(
            """
            WITH skip AS (
                SELECT c.id, a.seq FROM unnest($2::text[], $3::bigint[]) AS a(key, seq) JOIN conversations c ON c.key = a.key
            )
            SELECT \(StoredMessage.columns) FROM members mb
            LEFT JOIN skip s ON s.id = mb.conversation_id
            CROSS JOIN LATERAL (
                SELECT * FROM messages m
                WHERE m.conversation_id = mb.conversation_id
                  AND m.conversation_seq > greatest(mb.acked_through, coalesce(s.seq, 0))
                  AND m.sender <> $1
                ORDER BY m.conversation_seq LIMIT $4
            ) AS m
            WHERE mb."user" = $1
            ORDER BY mb.conversation_id, m.conversation_seq
            LIMIT $4
            """, [user, PostgresText.array(afterKeys), PostgresText.array(afterSeqs), String(limit)])
    }

    /// `user` has these messages: each moves their cursor in its conversation up to it, and so
    /// acknowledges every earlier message there too (a session sends a conversation in order, and a
    /// client acknowledges all it receives). Never moves a cursor back. Fire and forget: a lost
    /// acknowledgement costs a redelivery, which the client drops. Loop thread only.
    public func acknowledge(_ seqs: [UInt64], for user: String) {
        // Client input: a seq past Int64.max names no stored message.
        let keys = seqs.compactMap { Int64(exactly: $0) }
        guard !keys.isEmpty, PostgresText.isStorable(user) else { return }
        let statement = PostgresStatement(
            """
            UPDATE members mb SET acked_through = x.through
            FROM (SELECT conversation_id, max(conversation_seq) AS through FROM messages WHERE seq = ANY($2::bigint[]) GROUP BY conversation_id) AS x
            WHERE mb."user" = $1 AND mb.conversation_id = x.conversation_id AND mb.acked_through < x.through
            """, [user, PostgresText.array(keys)])
        query(statement, "acknowledgement from \(user)") { _ in }
    }
}

extension IMRecipient {
    /// The names it holds, for the text checks.
    fileprivate var names: [String] {
        switch self {
        case .user(let name), .room(let name): return [name]
        }
    }
}
