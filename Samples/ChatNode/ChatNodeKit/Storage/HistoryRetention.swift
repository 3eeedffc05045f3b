public import Logging
public import RunLoopChat
public import RunLoopIMCore
public import RunLoopKit

/// Deletes history older than its policy's `keep` on the loop, in small batches with pauses between
/// (``RetentionSweep`` decides; a store's `pruneHistory` does one batch). A message is deleted only
/// once every member of its conversation but its sender has acknowledged it: one still owed to an
/// offline user stays, however old, until that user's client acknowledges it (or the account is
/// removed).
///
/// Loop thread only: made, started and stopped on its loop's thread; the store answers there.
public final class HistoryRetention {
    /// One batch of the store: cutoff (wall-clock ms), after which `seq`, how many at most; the
    /// completion runs once on the loop's thread.
    public typealias Prune = (
        _ cutoff: UInt64, _ after: UInt64, _ limit: Int, _ completion: @escaping (Result<HistoryPruneBatch, IMStoreFailure>) -> Void
    ) -> Void

    public let loop: RunLoop
    private var sweep: RetentionSweep
    private let prune: Prune
    private let logger: Logger
    private var timer: RunLoopTimer?
    private var isStopped = false

    public init(policy: HistoryRetentionPolicy, loop: RunLoop, logger: Logger, prune: @escaping Prune) {
        sweep = RetentionSweep(policy: policy)
        self.loop = loop
        self.logger = logger
        self.prune = prune
    }

    /// Starts the first sweep at once.
    public func start() { schedule(at: loop.now) }

    /// Stops sweeping; a batch in flight finishes in the store, its answer is ignored.
    public func stop() {
        isStopped = true
        timer?.invalidate()
        timer = nil
    }

    private func schedule(at instant: LoopInstant) {
        guard !isStopped else { return }
        let timer = RunLoopTimer(fireAt: instant, label: "chat-node.retention") { [weak self] _ in self?.runBatch() }
        self.timer = timer
        loop.add(timer, forMode: .common)
    }

    private func runBatch() {
        let batch = sweep.batchDue(wallMilliseconds: sweep.policy.wallClock())
        prune(batch.cutoffMilliseconds, batch.after, batch.limit) { [weak self] outcome in
            guard let self, !self.isStopped else { return }
            let next = self.sweep.finished(outcome, now: self.loop.now)
            if case .failure(let failure) = outcome { self.logger.warning("history retention: \(failure); trying again later") }
            if let deleted = next.sweepDeleted, deleted > 0 {
                self.logger.info("history retention: deleted \(deleted) messages stored before \(batch.cutoffMilliseconds) ms")
            }
            self.schedule(at: next.at)
        }
    }
}
