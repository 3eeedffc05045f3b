/// The serial-executor role of a loop: what an actor pinned to the loop names as its executor
/// (``RunLoop/asUnownedSerialExecutor()`` returns it), while the loop itself stays the task executor.
///
/// Why an identity apart from the loop's: the Swift runtime compares identities to decide whether a
/// hop needs a new job. A job runs with a serial executor and a task executor; a hop onto the same
/// actor re-enqueues the task when the job's task executor is not the one the task prefers. Jobs of
/// actors and jobs of tasks preferring the loop used to arrive through the one `enqueue` the loop has
/// for both roles, so every job ran with the loop as task executor, and a task with no preference
/// (`Task.detached`, a task of another thread calling an actor of the loop) went through the queue
/// again at each hop: two extra loop passes per resume in `executor-bench`. With two identities the
/// queue knows how each job arrived: actor jobs run with no task executor, jobs of tasks preferring
/// the loop run with it (see ``ExecutorJobQueue``).
///
/// The task-executor role cannot be the separate one: `Task(executorPreference: loop)` retains the
/// loop and the runtime releases the identity `asUnownedTaskExecutor()` returned when the task ends,
/// so that identity must be the loop.
///
/// Owned by the loop's job queue; it refers back to the loop without owning it, as an actor pinned
/// to the loop holds the loop.
final class LoopSerialExecutor: SerialExecutor {
    private unowned let loop: RunLoop

    init(loop: RunLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        loop.jobs.enqueue(UnownedJob(job), preferringLoop: false, on: loop)
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func checkIsolated() {
        loop.checkIsolated()
    }

    func isIsolatingCurrentContext() -> Bool? {
        loop.isIsolatingCurrentContext()
    }
}
