import CRunLoopSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The loop's wake-up port: one eventfd watched by every mode's event base.
///
/// `pending` collapses wake-ups: while one write is still unread, further wake-ups skip the syscall.
/// That is safe because the loop clears `pending` as soon as it drains the eventfd, and after any wait
/// it re-checks sources, blocks, stop requests and deadlines before it could sleep again — so work
/// published before a wake-up is never missed ("signal, then wake" never loses work).
final class WakeUpPort: @unchecked Sendable {
    let fileDescriptor: Int32
    private let pending = Atomic<Bool>(false)

    init() throws(RunLoopError) {
        let fd = rlk_eventfd_create()
        guard fd >= 0 else { throw .resourceUnavailable("wake-up eventfd (errno \(errno))") }
        fileDescriptor = fd
    }

    deinit { close(fileDescriptor) }

    func wake() {
        if !pending.exchange(true, ordering: .acquiringAndReleasing) {
            _ = rlk_eventfd_signal(fileDescriptor)
        }
    }

    /// Consumes a pending wake-up, if any. Called on the loop thread.
    ///
    /// Read first, clear second. The other order loses wake-ups for good: a `wake()` landing between
    /// the clear and the read would have its write swallowed by the read while `pending` stays true, so
    /// every later `wake()` would skip its write and the loop could sleep forever. In this order a
    /// `wake()` that lands in between sees `pending` still set and skips its write, which is safe: the
    /// clearing `exchange` reads the value that `wake()`'s own exchange wrote, so the loop sees the work
    /// published before it, and re-checks that work before it could sleep again.
    func drain() {
        _ = rlk_eventfd_drain(fileDescriptor)
        _ = pending.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// Whether a wake-up was written and not yet drained (tests check which enqueues write none).
    var isPending: Bool { pending.load(ordering: .acquiring) }

    /// Drops a wake-up that nobody is waiting for (the loop was idle when it arrived).
    func discardStale() {
        if pending.load(ordering: .acquiring) { drain() }
    }
}
