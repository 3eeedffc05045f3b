/// The loop as a Swift concurrency executor: jobs of actors and tasks run on the loop's thread.
///
/// `RunLoop` itself is the executor rather than a type tied to it: an executor must outlive every
/// actor that names it as its `unownedExecutor`, and an actor pinned to a loop holds the loop anyway;
/// a separate object would need the loop to keep it (and it the loop), a cycle that outlives the thread.
/// There is one loop per thread and one executor per loop, so two actors on one loop share one serial
/// context, as actors on the main actor's executor do.
///
/// ```swift
/// actor Session {
///     let loop: RunLoop
///     nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
///     init(loop: RunLoop) { self.loop = loop }
/// }
/// ```
///
/// The mode rule: jobs run from a custom source in ``Mode/common``, so in the default mode and every
/// mode made common, in the order they were enqueued — never in a private mode. A nested run in a
/// private mode (a modal wait for one reply) therefore runs no task or actor code, just as CF's main
/// run loop drains the main queue only in its common modes: a private mode is run to wait for
/// particular sources, and a task resuming there would run code that expects the loop's normal state.
/// Jobs do not run re-entrantly either: a nested run started by a job runs no other job.
extension RunLoop: SerialExecutor, TaskExecutor {
    /// Queues `job` to run on the loop's thread in the next pass of a common mode, after the jobs
    /// enqueued before it. Called by the Swift runtime; safe from any thread, and it wakes a sleeping
    /// loop. A job enqueued by a job of this loop, on its thread, writes no wake-up: the loop polls
    /// after a job pass instead of sleeping. No allocation per job once the queue has grown to the
    /// busiest batch.
    ///
    /// The loop's thread must still be alive: a job enqueued on a torn-down loop traps, as its task
    /// would otherwise never finish.
    public func enqueue(_ job: consuming ExecutorJob) {
        jobs.enqueue(UnownedJob(job), on: self)
    }

    /// This loop as the serial executor of an actor pinned to it (return it from `unownedExecutor`).
    /// Any thread.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// This loop as a task executor (`Task(executorPreference:)`, `withTaskExecutorPreference`).
    /// Any thread.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Traps unless called on the loop's thread: what `assumeIsolated` asks when the runtime cannot
    /// tell by itself that the caller runs on this executor (code called from a plain callout, say).
    /// Any thread.
    public func checkIsolated() {
        precondition(isCurrentThread, "RunLoopKit: expected to run on the run loop's thread")
    }

    /// Whether the calling code runs on the loop's thread, and so is isolated to this executor: the
    /// loop's thread runs nothing else, and only it runs the loop's jobs. Any thread.
    public func isIsolatingCurrentContext() -> Bool? {
        isCurrentThread
    }
}
