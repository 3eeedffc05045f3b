import Logging
public import RunLoopChat
public import RunLoopIMCore

extension SQLiteIMStore {
    /// One batch of a retention sweep (``HistoryPruneBatch``): examines at most `limit` messages
    /// numbered after `after`, and deletes those stored before `cutoffMilliseconds` (wall-clock
    /// milliseconds, as `sent_at_ms`) that every member of their conversation but the sender has
    /// acknowledged. In one transaction over a range of at most `limit` rows, so its time is bounded
    /// whatever the table's size. Loop thread only; returns at once.
    public func pruneHistory(sentBefore cutoffMilliseconds: UInt64, after: UInt64, limit: Int) -> Result<HistoryPruneBatch, IMStoreFailure> {
        let cutoff = Int64(clamping: cutoffMilliseconds)
        let start = Int64(clamping: after)
        do {
            return .success(
                try database.transaction { () throws(SQLiteError) -> HistoryPruneBatch in
                    var examined = 0
                    var last = start
                    var reachedCutoff = false
                    try database.query(Self.pruneBatchSQL, [.integer(start), .integer(cutoff), .integer(Int64(limit))]) { row in
                        examined = Int(row.integer(0))
                        last = row.integer(1)
                        reachedCutoff = row.integer(2) != 0
                    }
                    try database.query(Self.pruneSQL, [.integer(start), .integer(last), .integer(cutoff)])
                    return HistoryPruneBatch(deleted: database.changes, lastExamined: UInt64(last), isSweepDone: examined < limit || reachedCutoff)
                })
        } catch {
            logger.error("history not pruned: \(error)")
            return .failure(IMStoreFailure("prune history", reason: "\(error)"))
        }
    }

    /// The batch: how many rows, the last `seq`, and whether one is at or past the cutoff.
    static let pruneBatchSQL = """
        SELECT count(*), coalesce(max(seq), ?1), coalesce(max(sent_at_ms >= ?2), 0)
        FROM (SELECT seq, sent_at_ms FROM messages WHERE seq > ?1 ORDER BY seq LIMIT ?3)
        """

    /// The batch's old messages that nobody is still owed.
    static let pruneSQL = """
        DELETE FROM messages WHERE seq > ?1 AND seq <= ?2 AND sent_at_ms < ?3 AND NOT EXISTS (
            SELECT 1 FROM members mb WHERE mb.conversation_id = messages.conversation_id
            AND mb.acked_through < messages.conversation_seq AND mb.user <> messages.sender)
        """
}
