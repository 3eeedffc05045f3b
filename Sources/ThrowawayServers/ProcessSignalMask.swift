public import Foundation
import Glibc

extension Process {
    /// Starts the child like `run()`, but with no signal blocked in it, so that SIGTERM and SIGINT
    /// reach it. Call it where you would call `run()`, from any thread.
    ///
    /// Foundation on Linux starts the child with `posix_spawn` on the calling thread and does not set
    /// the child's signal mask, so the child keeps the caller's. A Swift concurrency thread blocks
    /// every signal: a child started from a `Task` then ignores SIGTERM, and a fixture that stops it
    /// politely waits a minute before ``waitForExit(within:)`` falls back to SIGKILL. Clearing the
    /// calling thread's mask for the length of the spawn is the one handle Foundation leaves us.
    ///
    /// While the spawn runs, a signal sent to the whole process may be delivered to this thread
    /// instead of another; the handlers this process installs run on any thread, so that is harmless.
    public func runWithNoSignalBlocked() throws {
        var none = sigset_t()
        sigemptyset(&none)
        var previous = sigset_t()
        pthread_sigmask(SIG_SETMASK, &none, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try run()
    }
}
