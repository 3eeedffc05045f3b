import Synchronization

/// The jobs waiting for a loop that serves as a Swift concurrency executor, and the custom source
/// that runs them.
///
/// Why a source of its own rather than ``RunLoop/perform(inModes:label:_:)``: a block costs a closure
/// context and a `PendingBlock` per job and takes the loop lock every item shares, and a block queued
/// from inside a block waits for the loop's next wake-up (§9.13) — the path a task resuming another
/// task takes. Here a job is an entry of two words appended to an array whose storage is reused (no
/// allocation once the arrays have grown to the busiest batch), under a lock only enqueues and the drain take; then the
/// source is signalled and the loop woken through its wake-up port, whose pending flag collapses the
/// wake-ups of a burst into one eventfd write.
///
/// The source is created and added to ``RunLoop/Mode/common`` at the first enqueue, not with the loop:
/// from then on it keeps the common modes from running empty (a plain `run()` no longer returns
/// `finished`), as CF's main queue port keeps the main loop's; a loop never used as an executor is
/// unchanged.
final class ExecutorJobQueue: @unchecked Sendable {
    /// A queued job and the role it came through, which decides the task executor it runs with.
    struct Entry {
        let job: UnownedJob
        /// True for a job of a task preferring the loop (it came through ``RunLoop/enqueue(_:)``, the
        /// task-executor role); false for an actor's job (through ``LoopSerialExecutor``).
        let preferringLoop: Bool
    }

    private let lock = Lock()
    // Guarded by `lock` (unchecked exclusivity: the lock serialises every access, as RunLoop's fields).
    @exclusivity(unchecked) private var pending: [Entry] = []
    @exclusivity(unchecked) private var source: RunLoopSource?
    /// Jobs queued since the loop started, for tests: how many went through the queue rather than
    /// running as a hop inside a job.
    @exclusivity(unchecked) private var queuedCount = 0

    /// The identity actors pinned to the loop name; made at first use (it needs the loop).
    private let serialRole = AtomicLazyReference<LoopSerialExecutor>()

    // Loop thread only.
    /// The storage of the last batch, handed back to `pending` at the next drain: no allocation per batch.
    @exclusivity(unchecked) private var spare: [Entry] = []
    /// True while jobs run: a nested run started by a job runs no job (see `drain`).
    @exclusivity(unchecked) private(set) var isDraining = false
    /// A nested run took the source's signal while jobs were running; the outer drain signals again.
    @exclusivity(unchecked) private var skippedSignal = false
    /// The job running now, while its run lasts: the runtime may hand it straight back (see `run`).
    @exclusivity(unchecked) private var running: UnsafeRawPointer?
    /// The running job was handed back through the serial role before its run returned.
    @exclusivity(unchecked) private var handedBack = false
    /// Jobs run again at once because the runtime handed them back, for tests.
    @exclusivity(unchecked) private(set) var rerunCount = 0
    /// Source callouts that ran jobs, for tests: the loop passes spent on jobs.
    @exclusivity(unchecked) private(set) var drainCount = 0

    /// The loop's serial-executor role (``LoopSerialExecutor``). Any thread.
    func serialExecutor(of loop: RunLoop) -> LoopSerialExecutor {
        if let role = serialRole.load() { return role }
        return serialRole.storeIfNil(LoopSerialExecutor(loop: loop))
    }

    /// Jobs queued so far (not counting jobs run again at once after a hand-back). Any thread.
    var queued: Int { lock.withLock { queuedCount } }

    /// Queues `job` for `loop` and wakes it. Any thread.
    /// - Parameter preferringLoop: the job came through the task-executor role (see ``Entry``).
    func enqueue(_ job: UnownedJob, preferringLoop: Bool, on loop: RunLoop) {
        // A dead thread runs nothing: the job's task would hang without a trace, a worse failure.
        precondition(!loop.isTornDown, "RunLoopKit: a job was enqueued on a run loop whose thread has ended")
        let fromLoopThread = loop.isCurrentThread
        // `isDraining` and `running` are read only on the loop's thread.
        if fromLoopThread && isDraining && !preferringLoop && running == Self.identity(of: job) {
            // The running task hops onto an actor of this loop and the runtime re-enqueues it
            // because its job ran with a task executor other than the one it prefers: `run` runs it
            // again as soon as this run returns, with the other one (see `run`).
            handedBack = true
            return
        }
        let (jobSource, isNew) = lock.withLock { () -> (RunLoopSource, Bool) in
            pending.append(Entry(job: job, preferringLoop: preferringLoop))
            queuedCount &+= 1
            if let source { return (source, false) }
            let created = RunLoopSource(label: "RunLoop executor") { [unowned self, unowned loop] _ in drain(on: loop) }
            source = created
            return (created, true)
        }
        // Another thread's first enqueue may signal before this add: the signal waits in the source,
        // and the wake-up below comes after the add.
        if isNew { loop.add(jobSource, forMode: .common) }
        jobSource.signal()
        // A job enqueued by a job of this loop (a task's hop from an actor to non-isolated code, a
        // yield, a task it starts) needs no wake-up: the loop is in its sources pass, which counts as
        // handled, so it polls instead of sleeping and performs the source again in its next pass —
        // or, if the run returns first, at the start of the next run.
        if fromLoopThread && isDraining { return }
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
        var batch: [Entry] = []
        swap(&batch, &spare)
        lock.withLock { swap(&batch, &pending) }
        isDraining = true
        drainCount &+= 1
        let serial = serialExecutor(of: loop).asUnownedSerialExecutor()
        let task = UnownedTaskExecutor(ordinary: loop)
        for entry in batch { run(entry, serial: serial, task: task, on: loop) }
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

    /// Runs one job isolated to the loop's actors, with the loop as task executor if it came through
    /// that role and with none if it is an actor's job: the two kinds of task then hop between the
    /// loop's actors (and, preferring the loop, its non-isolated code) without a new job.
    ///
    /// An actor's job may still belong to a task that prefers the loop (resumed while on an actor of
    /// the loop), and a task's preference changes inside `withTaskExecutorPreference`; nothing in
    /// the job says so. Then the runtime hands the job straight back at the task's next hop onto an
    /// actor of the loop, before the run returns (`enqueue` notes it): the job runs again at once
    /// with the other task executor, as the hop would have run inline had the first guess been right.
    /// Once only: a task preferring some other task executor is handed back again, and then queued
    /// as any job, as it always was.
    private func run(_ entry: Entry, serial: UnownedSerialExecutor, task: UnownedTaskExecutor, on loop: RunLoop) {
        running = Self.identity(of: entry.job)
        runOnce(entry.job, serial: serial, task: entry.preferringLoop ? task : nil)
        if handedBack {
            handedBack = false
            rerunCount &+= 1
            runOnce(entry.job, serial: serial, task: entry.preferringLoop ? nil : task)
            if handedBack {
                handedBack = false
                running = nil
                enqueue(entry.job, preferringLoop: false, on: loop)
            }
        }
        running = nil
    }

    private func runOnce(_ job: UnownedJob, serial: UnownedSerialExecutor, task: UnownedTaskExecutor?) {
        if let task {
            job.runSynchronously(isolatedTo: serial, taskExecutor: task)
        } else {
            job.runSynchronously(on: serial)
        }
    }

    /// The job's address: `UnownedJob` is a frozen wrapper of the job's pointer, and a task's job is
    /// the task itself, so a task handed back has the address of the job that ran it.
    private static func identity(of job: UnownedJob) -> UnsafeRawPointer {
        unsafeBitCast(job, to: UnsafeRawPointer.self)
    }
}
