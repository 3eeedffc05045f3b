import Synchronization

/// A run loop hosted on a thread of its own, running its default mode until ``stop()``: one per
/// long-lived actor of a program (a server, a client, a link), as a daemon would give each its thread.
///
/// The loop exists, with the thread's ``RunLoop/current``, when `init` returns, and keeps running while
/// it has nothing else to do (a source of its own, never signalled, holds ``RunLoop/Mode/common``).
/// Add work with the loop's cross-thread calls (``RunLoop/perform(inModes:label:_:)``) or with
/// ``performAndWait(label:_:)``; objects created on the loop stay on its thread.
///
/// The thread starts with no signal blocked (see ``JoinableThread``).
///
/// Threads: every method may be called from any thread. Call ``stop()`` before letting go of it:
/// the thread does not end by itself.
public final class RunLoopThread: Sendable {
    /// For people: logs, traces, the demo's timeline.
    public let name: String
    /// The hosted loop: its thread's ``RunLoop/current``, running in the default mode until ``stop()``.
    public let loop: RunLoop
    private let thread: JoinableThread
    /// Set by the first ``stop()``: a thread is joined once.
    private let stopped = Mutex(false)
    /// Opens when the loop's outermost run has returned.
    private let ended: Latch

    /// Starts the thread and returns once its loop is running.
    /// - Parameter name: for people; no effect on the thread.
    public init(name: String) {
        let handover = Handover()
        let ended = Latch()
        self.ended = ended
        thread = JoinableThread {
            let loop = RunLoop.current
            loop.add(RunLoopSource(label: "RunLoopThread.keepAlive") { _ in }, forMode: .common)
            // Handed over from inside the run: a stop() right after init must find it running, as
            // stopAll() ignores a loop that is not.
            loop.perform(inModes: [.common]) { handover.hand(loop) }
            // Throws only for misuse of the loop from this thread, which nothing here can commit.
            try? loop.run()
            ended.open()
        }
        self.name = name
        loop = handover.take()
    }

    /// Runs `block` on the loop's thread, in the common modes, and returns after it has run: the
    /// waiting counterpart of ``RunLoop/perform(inModes:label:_:)`` (`performSelector:onThread:waitUntilDone:`).
    /// Called on the loop's own thread, runs `block` at once instead of waiting for itself.
    /// - Parameter label: names the callout in traces (an ``RunLoopCalloutObserver`` sees it).
    /// - Precondition: not after ``stop()``: the block would never run.
    public func performAndWait(label: String? = nil, _ block: @escaping @Sendable () -> Void) {
        if loop.isCurrentThread {
            block()
            return
        }
        precondition(!stopped.withLock { $0 }, "performAndWait on a stopped RunLoopThread would never return")
        let done = Latch()
        loop.perform(inModes: [.common], label: label) {
            block()
            done.open()
        }
        done.wait()
    }

    /// Ends the loop (every nested run included) and returns once the thread has ended and the loop is
    /// torn down (``RunLoop/isTornDown``). Idempotent. Never call it on the loop's own thread, which
    /// would wait for itself.
    public func stop() {
        precondition(!loop.isCurrentThread, "RunLoopThread.stop() on its own thread would wait for itself")
        let first = stopped.withLock { wasStopped in
            defer { wasStopped = true }
            return !wasStopped
        }
        guard first else { return }
        // Directly, not through perform: a nested run in a mode of its own would never see the block.
        // stopAll() ends only the runs going on when it is called; a nested run that a block was about
        // to start (racing this call) would begin after it and keep the thread forever. So it is
        // asked again until the outermost run has returned.
        loop.stopAll()
        while !ended.wait(timeout: .milliseconds(10)) { loop.stopAll() }
        thread.join()
    }
}

/// Carries the loop from the new thread to `init`.
private final class Handover: @unchecked Sendable {
    private let ready = Latch()
    /// Written once before `ready` opens, read after it: the latch orders the two.
    private var loop: RunLoop?

    func hand(_ loop: RunLoop) {
        self.loop = loop
        ready.open()
    }

    func take() -> RunLoop {
        ready.wait()
        return loop!
    }
}
