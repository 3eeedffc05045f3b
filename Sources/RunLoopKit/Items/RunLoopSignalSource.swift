import CRunLoopSupport

#if canImport(Glibc)
import Glibc
#endif

/// Delivers a POSIX signal (SIGINT, SIGTERM, SIGHUP, SIGUSR1, …) as a port source on the loop, so a
/// daemon handles it in ordinary code on its own thread instead of inside a signal handler.
///
/// While at least one signal source for a signal exists, the process-wide disposition of that signal is
/// a small handler that only wakes the sources' loops; when the last one is invalidated the previous
/// disposition returns. Deliveries that arrive before the loop gets to them are coalesced: the callout
/// receives how many arrived.
///
/// Every signal source for a signal sees every delivery of it (up to 32 sources per signal).
///
/// A signal arrives only through a thread that does not block it. `kill(getpid(), …)` (how SIGTERM
/// usually comes) is delivered to any such thread; `raise` targets the calling thread only. Note that
/// Swift concurrency's worker threads block every signal, and threads inherit their creator's mask.
///
/// Thread safety: as ``RunLoopPortSource``.
public final class RunLoopSignalSource: RunLoopPortSource, @unchecked Sendable {
    /// The signal number.
    public let signal: Int32
    private let slot: Int32

    /// - Parameters:
    ///   - signal: the signal to catch, e.g. `SIGTERM`.
    ///   - handler: runs on the loop's thread with the number of deliveries since the last callout.
    /// - Throws: ``RunLoopError/invalidSignal(_:)`` for SIGKILL, SIGSTOP or an out-of-range number;
    ///   ``RunLoopError/signalSlotsExhausted(_:)`` when too many sources watch the signal.
    public init(
        signal: Int32,
        order: Int = 0,
        label: String? = nil,
        handler: @escaping (RunLoopSignalSource, Int) -> Void
    ) throws(RunLoopError) {
        var fd: Int32 = -1
        let slot = rlk_signal_slot_acquire(signal, &fd)
        guard slot >= 0 else {
            throw errno == EINVAL ? .invalidSignal(signal) : .signalSlotsExhausted(signal)
        }
        self.signal = signal
        self.slot = slot
        do throws(RunLoopError) {
            try super.init(
                fileDescriptor: fd, interest: .readable, order: order, label: label ?? "signal \(signal)",
                perform: { source, _ in
                    let signalSource = source as! RunLoopSignalSource
                    let count = rlk_eventfd_drain(signalSource.fileDescriptor)
                    if count > 0 { handler(signalSource, Int(count)) }
                })
        } catch {
            rlk_signal_slot_release(signal, slot)
            throw error
        }
    }

    override func didInvalidate() {
        // The slot's eventfd belongs to the process-wide table and is reused, never closed.
        rlk_signal_slot_release(signal, slot)
    }

    deinit {
        if isValid { rlk_signal_slot_release(signal, slot) }
    }
}
