public import RunLoopChat
public import RunLoopIMCore
import RunLoopPostgres

extension PostgresChatStore {
    /// One batch of a retention sweep, as the SQLite store's: examines at most `limit` messages
    /// numbered after `after`, deletes those stored before `cutoffMilliseconds` that every member of
    /// their conversation but the sender has acknowledged. One statement over at most `limit` rows.
    /// Loop thread only; `completion` runs there once.
    public func pruneHistory(
        sentBefore cutoffMilliseconds: UInt64, after: UInt64, limit: Int, completion: @escaping (Result<HistoryPruneBatch, IMStoreFailure>) -> Void
    ) {
        let statement = PostgresStatement(
            """
            WITH batch AS (SELECT seq, sent_at_ms FROM messages WHERE seq > $1::bigint ORDER BY seq LIMIT $3::bigint),
            gone AS (
                DELETE FROM messages m USING batch b WHERE m.seq = b.seq AND b.sent_at_ms < $2::bigint AND NOT EXISTS (
                    SELECT 1 FROM members mb WHERE mb.conversation_id = m.conversation_id
                    AND mb.acked_through < m.conversation_seq AND mb."user" <> m.sender)
                RETURNING m.seq)
            SELECT (SELECT count(*) FROM batch), (SELECT coalesce(max(seq), $1::bigint) FROM batch),
                (SELECT count(*) FROM batch WHERE sent_at_ms >= $2::bigint), (SELECT count(*) FROM gone)
            """, [String(after), String(cutoffMilliseconds), String(limit)])
        query(statement, "prune history") { result in
            completion(
                result.map { rows in
                    let examined = rows.int(0, 0) ?? 0
                    return HistoryPruneBatch(
                        deleted: rows.int(0, 3) ?? 0, lastExamined: UInt64(rows[0, 1] ?? "") ?? after,
                        isSweepDone: examined < limit || (rows.int(0, 2) ?? 0) > 0)
                })
        }
    }
}
