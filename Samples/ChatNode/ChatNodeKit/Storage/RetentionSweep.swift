import RunLoopChat
import RunLoopIMCore
import RunLoopKit

#if canImport(Glibc)
import Glibc
#endif

/// How long a node keeps history and how it deletes what is older (``HistoryRetention``).
public struct HistoryRetentionPolicy: Sendable {
    /// Messages stored longer ago than this go once everyone they were for has acknowledged them.
    public var keep: Duration
    /// Messages a batch examines at most: one short transaction on the loop.
    public var batchSize = 500
    /// The wait between two batches of a sweep, so the node's own work runs in between.
    public var batchPause: Duration = .milliseconds(20)
    /// The wait from the end of one sweep to the start of the next.
    public var sweepInterval: Duration = .seconds(3600)
    /// The wait after a store failure before a new sweep starts.
    public var retryAfterFailure: Duration = .seconds(60)
    /// Wall-clock milliseconds since 1970, as messages are stamped: what `keep` counts back from.
    public var wallClock: @Sendable () -> UInt64 = HistoryRetentionPolicy.realTimeMilliseconds

    public init(keep: Duration) {
        self.keep = keep
    }

    /// `CLOCK_REALTIME` in milliseconds.
    public static func realTimeMilliseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(max(0, now.tv_sec)) * 1000 + UInt64(max(0, now.tv_nsec)) / 1_000_000
    }
}

/// The decisions of a retention sweep, without a store or a timer: which batch is due, and when the
/// next one is. A sweep fixes its cutoff when it starts and walks the messages in `seq` order from
/// the first; it ends at the end of the messages or at the first one newer than the cutoff, and the
/// next starts ``HistoryRetentionPolicy/sweepInterval`` later (from the first again: messages owed
/// then may have been acknowledged since). A value; loop thread only, like its owner.
struct RetentionSweep {
    /// One batch to ask the store for.
    struct Batch: Equatable {
        var cutoffMilliseconds: UInt64
        var after: UInt64
        var limit: Int
    }

    /// What a finished batch leads to.
    struct Next: Equatable {
        /// When the next batch is due.
        var at: LoopInstant
        /// Messages the sweep deleted in all, when this batch ended it.
        var sweepDeleted: Int?
    }

    let policy: HistoryRetentionPolicy
    private var current: Batch?
    private var deleted = 0

    init(policy: HistoryRetentionPolicy) {
        self.policy = policy
    }

    /// The batch to run now: the next of the sweep under way, or the first of a new one, whose cutoff
    /// is `keep` before `wallMilliseconds`.
    mutating func batchDue(wallMilliseconds: UInt64) -> Batch {
        if let current { return current }
        let keep = UInt64(clamping: policy.keep.components.seconds) * 1000 + UInt64(policy.keep.components.attoseconds / 1_000_000_000_000_000)
        let batch = Batch(cutoffMilliseconds: wallMilliseconds > keep ? wallMilliseconds - keep : 0, after: 0, limit: policy.batchSize)
        current = batch
        deleted = 0
        return batch
    }

    /// The store answered the due batch at `now`.
    mutating func finished(_ outcome: Result<HistoryPruneBatch, IMStoreFailure>, now: LoopInstant) -> Next {
        guard case .success(let batch) = outcome else {
            current = nil
            return Next(at: now + policy.retryAfterFailure)
        }
        deleted += batch.deleted
        guard !batch.isSweepDone else {
            current = nil
            return Next(at: now + policy.sweepInterval, sweepDeleted: deleted)
        }
        current?.after = batch.lastExamined
        return Next(at: now + policy.batchPause)
    }
}
