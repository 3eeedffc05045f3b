/// The jobs waiting for a loop that serves as a Swift concurrency executor, and the custom source
/// that runs them.
///
/// Why a source of its own rather than ``RunLoop/perform(inModes:label:_:)``: a block costs a closure
/// context and a `PendingBlock` per job and takes the loop lock every item shares, and a block queued
/// from inside a block waits for the loop's next wake-up (§9.13) — the path a task resuming another
/// task takes. Here a job is one word appended to an array whose storage is reused (no allocation once
/// the arrays have grown to the busiest batch), under a lock only enqueues and the drain take; then the
/// source is signalled and the loop woken through its wake-up port, whose pending flag collapses the
/// wake-ups of a burst into one eventfd write.
///
/// The source is created and added to ``RunLoop/Mode/common`` at the first enqueue, not with the loop:
/// from then on it keeps the common modes from running empty (a plain `run()` no longer returns
/// `finished`), as CF's main queue port keeps the main loop's; a loop never used as an executor is
/// unchanged.
final class ExecutorJobQueue: @unchecked Sendable {
    private let lock = Lock()
    // Guarded by `lock` (unchecked exclusivity: the lock serialises every access, as RunLoop's fields).
    @exclusivity(unchecked) private var pending: [UnownedJob] = []
    @exclusivity(unchecked) private var source: RunLoopSource?

    // Loop thread only.
    /// The storage of the last batch, handed back to `pending` at the next drain: no allocation per batch.
    @exclusivity(unchecked) private var spare: [UnownedJob] = []
    /// True while jobs run: a nested run started by a job runs no job (see `drain`).
    @exclusivity(unchecked) private(set) var isDraining = false
    /// A nested run took the source's signal while jobs were running; the outer drain signals again.
    @exclusivity(unchecked) private var skippedSignal = false

    /// Queues `job` for `loop` and wakes it. Any thread.
    func enqueue(_ job: UnownedJob, on loop: RunLoop) {
        // A dead thread runs nothing: the job's task would hang without a trace, a worse failure.
        precondition(!loop.isTornDown, "RunLoopKit: a job was enqueued on a run loop whose thread has ended")
        let (jobSource, isNew) = lock.withLock { () -> (RunLoopSource, Bool) in
            pending.append(job)
            if let source { return (source, false) }
            let created = RunLoopSource(label: "RunLoop executor") { [unowned self, unowned loop] _ in drain(on: loop) }
            source = created
            return (created, true)
        }
        // Another thread's first enqueue may signal before this add: the signal waits in the source,
        // and the wake-up below comes after the add.
        if isNew { loop.add(jobSource, forMode: .common) }
        jobSource.signal()
        // A job enqueued by a job of this loop (a task's hop back onto its actor, a yield, a task it
        // starts) needs no wake-up: the loop is in its sources pass, which counts as handled, so it
        // polls instead of sleeping and performs the source again in its next pass — or, if the run
        // returns first, at the start of the next run. The Swift runtime makes such an enqueue at every
        // hop of a task without this loop as its preferred task executor (jobs run with the loop as
        // their task executor, so the preferences differ): two per resume in `executor-bench`, each an
        // eventfd write and read before this. `isDraining` is read only on the loop's thread.
        if loop.isCurrentThread && isDraining { return }
        loop.wakeUp()
    }

    /// Runs the jobs queued before the call, in enqueue order; later ones wait for the next pass.
    /// Loop thread only (the source's callout).
    ///
    /// Not re-entrant, as CF drains the main queue only outside a main-queue block: a job that starts a
    /// nested run (in the default mode, say) does not see other jobs run inside it, so code running as a
    /// job is never interleaved with other jobs of the loop before it returns.
    private func drain(on loop: RunLoop) {
        if isDraining {
            skippedSignal = true
            return
        }
        // Moved out of `spare`, not copied: a copy left `spare` sharing the buffer that became
        // `pending`, so the next enqueue copied it (an allocation and a free per job).
        var batch: [UnownedJob] = []
        swap(&batch, &spare)
        lock.withLock { swap(&batch, &pending) }
        isDraining = true
        let serial = UnownedSerialExecutor(ordinary: loop)
        let task = UnownedTaskExecutor(ordinary: loop)
        for job in batch { job.runSynchronously(isolatedTo: serial, taskExecutor: task) }
        isDraining = false
        // Emptied from the end: `removeAll(keepingCapacity:)` is a generic range replacement (≈ 170
        // instructions for a batch of one job).
        batch.removeAll(keepingCapacityUpTo: .max)
        spare = batch
        if skippedSignal {
            skippedSignal = false
            // The loop is in its sources pass: a source signalled now runs before it could sleep.
            lock.withLock { pending.isEmpty ? nil : source }?.signal()
        }
    }
}
