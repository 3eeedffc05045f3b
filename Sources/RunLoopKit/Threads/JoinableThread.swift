#if canImport(Glibc)
import Glibc
#endif

/// A POSIX thread of its own, started with no signal blocked, like a daemon's own threads.
///
/// A new thread inherits its creator's signal mask, and Swift concurrency's worker threads block every
/// signal: a thread started from a task would otherwise never see a signal, which a loop with a
/// ``RunLoopSignalSource``, or a child process it starts, may need. Each thread gets its own
/// ``RunLoop/current`` the first time it asks for one.
///
/// Start one with ``init(_:)`` and ``join()`` it exactly once, or start it with ``detach(_:)`` and
/// forget it. For a loop that runs until told to stop, see ``RunLoopThread``.
public struct JoinableThread: Sendable {
    private let thread: pthread_t

    /// Starts a thread running `body`. Call ``join()`` exactly once.
    /// - Precondition: the system can create a thread (pthread_create fails only when out of memory
    ///   or over the process's thread limit).
    public init(_ body: @escaping @Sendable () -> Void) {
        final class Box: @unchecked Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        let status = pthread_create(
            &thread, nil,
            { context in
                let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
                var unblocked = sigset_t()
                sigemptyset(&unblocked)
                pthread_sigmask(SIG_SETMASK, &unblocked, nil)
                box.body()
                return nil
            }, context)
        precondition(status == 0, "pthread_create failed: \(String(cString: strerror(status)))")
        self.thread = thread
    }

    /// Starts a thread running `body` that nobody joins: it ends when `body` returns.
    public static func detach(_ body: @escaping @Sendable () -> Void) {
        pthread_detach(JoinableThread(body).thread)
    }

    /// Blocks until the thread has ended — after `body` returned and the thread's own teardown ran,
    /// its loop's included (``RunLoop/isTornDown``). Call it exactly once, from another thread.
    public func join() {
        pthread_join(thread, nil)
    }
}
