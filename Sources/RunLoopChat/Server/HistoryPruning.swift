/// One batch of a history retention sweep: what a store examined and deleted.
///
/// A sweep walks the messages in `seq` order, a bounded batch at a time (so no single delete holds
/// the database or the loop for long), and deletes a message only when it is older than the cutoff
/// and every member of its conversation but its sender has acknowledged it: a message still owed to
/// someone, however old, stays until it is acknowledged.
public struct HistoryPruneBatch: Equatable, Sendable {
    /// Messages deleted by this batch.
    public var deleted: Int
    /// The highest `seq` examined: where the next batch starts (after it).
    public var lastExamined: UInt64
    /// Whether the sweep is over: the batch reached the end of the messages, or a message at or
    /// after the cutoff (messages are numbered in the order they were stored, so the rest are newer).
    public var isSweepDone: Bool

    public init(deleted: Int, lastExamined: UInt64, isSweepDone: Bool) {
        self.deleted = deleted
        self.lastExamined = lastExamined
        self.isSweepDone = isSweepDone
    }
}
