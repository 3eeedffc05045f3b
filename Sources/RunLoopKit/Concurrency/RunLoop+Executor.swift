/// The loop as a Swift concurrency executor: jobs of actors and tasks run on the loop's thread.
///
/// `RunLoop` itself is the task executor (`Task(executorPreference: loop)`,
/// `withTaskExecutorPreference(loop)`), and an actor pinned to the loop returns
/// ``asUnownedSerialExecutor()``, the loop's serial role: a small object the loop owns, with an
/// identity of its own so that the loop can tell an actor's job from a job of a task preferring the
/// loop, and run each with the task executor that lets its task hop between the loop's actors
/// without a new job (see `LoopSerialExecutor`). An executor must outlive every actor that names it:
/// an actor pinned to a loop holds the loop, and the loop holds its serial role. There is one loop
/// per thread and one serial role per loop, so two actors on one loop share one serial context, as
/// actors on the main actor's executor do.
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
///
/// Under the thread sanitizer: a continuation resumed from another thread before its task on the loop
/// reached the await (the task then goes on inline, without a new job) is reported as a race between
/// `resume()` and the task's next step. The report is false: the Swift runtime's await
/// (`swift_continuation_await`) synchronises with the resume through an atomic inside the
/// uninstrumented runtime and tells the sanitizer of the resume's side only. Any executor on which
/// such a task hops inline meets it (SwiftNIO's too); the loop's own tests resume after the await
/// when run under the sanitizer.
extension RunLoop: SerialExecutor, TaskExecutor {
    /// Queues `job`, a job of a task preferring this loop, to run on the loop's thread in the next
    /// pass of a common mode, after the jobs enqueued before it (actors' jobs included). Called by
    /// the Swift runtime; safe from any thread, and it wakes a sleeping loop. A job enqueued by a job
    /// of this loop, on its thread, writes no wake-up: the loop polls after a job pass instead of
    /// sleeping. No allocation per job once the queue has grown to the busiest batch.
    ///
    /// The job runs with this loop as its task executor, isolated to the loop's actors. Actors' jobs
    /// do not come here but through ``asUnownedSerialExecutor()``; an actor that names the loop
    /// itself (`UnownedSerialExecutor(ordinary: loop)`) still runs on its thread, but its hops cost
    /// a job each.
    ///
    /// The loop's thread must still be alive: a job enqueued on a torn-down loop traps, as its task
    /// would otherwise never finish.
    public func enqueue(_ job: consuming ExecutorJob) {
        jobs.enqueue(UnownedJob(job), preferringLoop: true, on: self)
    }

    /// The serial executor of an actor pinned to this loop (return it from `unownedExecutor`): the
    /// loop's serial role, the same for every actor of the loop, whose jobs run on the loop's thread
    /// in enqueue order with the loop's other jobs. Any thread.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        jobs.serialExecutor(of: self).asUnownedSerialExecutor()
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
