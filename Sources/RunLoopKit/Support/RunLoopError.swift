#if canImport(Glibc)
import Glibc
#endif

/// Why a run-loop call was refused. Every misuse the loop can detect is reported with one of these
/// instead of a crash or a silent no-op.
public enum RunLoopError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call must be made on the thread that owns the loop (running it, changing its clock).
    case notOwningThread
    /// `RunLoop.Mode.common` is a set of modes, not a mode: it can hold items but cannot be run.
    case commonModesNotRunnable
    /// The descriptor is not open.
    case invalidDescriptor(Int32)
    /// The descriptor is open but epoll cannot watch it (a regular file or a directory).
    case unsupportedDescriptor(Int32)
    /// libevent refused to watch the descriptor; `errno` says why.
    case descriptorRejected(fd: Int32, errno: Int32)
    /// The signal cannot be caught (SIGKILL, SIGSTOP) or is out of range.
    case invalidSignal(Int32)
    /// Every process-wide delivery slot for this signal is taken.
    case signalSlotsExhausted(Int32)
    /// The item was invalidated; it cannot be scheduled again.
    case itemInvalidated
    /// The loop's thread has ended and the loop was torn down.
    case loopTornDown
    /// The loop's clock can only be replaced while it is not running and holds no timers.
    case clockInUse
    /// A kernel resource (eventfd, timerfd, epoll base) could not be created.
    case resourceUnavailable(String)
    /// The mode was never created on this loop (no item was ever added to it, no block queued for
    /// it), so running it could only return at once: almost always a misspelt name.
    case unknownMode(RunLoop.Mode)
    /// ``RunLoop/run(_:untilComplete:)`` was asked to run a mode outside the common set, where the
    /// loop runs no executor job: the operation could never start.
    case notACommonMode(RunLoop.Mode)
    /// ``RunLoop/run(_:untilComplete:)`` was called from inside an executor job of the same loop: jobs
    /// do not run re-entrantly, so the operation could never start.
    case insideExecutorJob

    public var description: String {
        switch self {
        case .notOwningThread: return "this call must be made on the thread that owns the run loop"
        case .commonModesNotRunnable: return "the common-modes pseudo-mode cannot be run; run a concrete mode"
        case .invalidDescriptor(let fd): return "descriptor \(fd) is not open"
        case .unsupportedDescriptor(let fd): return "descriptor \(fd) cannot be watched by epoll (regular file or directory)"
        case .descriptorRejected(let fd, let err): return "libevent refused descriptor \(fd): \(String(cString: strerror(err)))"
        case .invalidSignal(let signo): return "signal \(signo) cannot be caught"
        case .signalSlotsExhausted(let signo): return "too many sources watch signal \(signo)"
        case .itemInvalidated: return "the item was invalidated and cannot be scheduled"
        case .loopTornDown: return "the run loop's thread has ended"
        case .clockInUse: return "the clock can only be replaced while the loop is idle and holds no timers"
        case .resourceUnavailable(let what): return "could not create \(what)"
        case .notACommonMode(let mode):
            return "run-loop mode \"\(mode)\" is not a common mode, so no executor job runs in it; add it with addCommonMode first"
        case .insideExecutorJob: return "run(untilComplete:) cannot be called from an executor job of the same loop: it would wait for itself"
        case .unknownMode(let mode):
            let hint =
                ["default", "common"].contains(mode.rawValue.lowercased())
                ? "; the \(mode.rawValue.lowercased()) mode is RunLoop.Mode.\(mode.rawValue.lowercased())" : ""
            return "run-loop mode \"\(mode)\" was never used on this loop (nothing added to it, no block queued for it)\(hint)"
        }
    }
}
