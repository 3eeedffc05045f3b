import CRunLoopSupport

/// The clock a loop reads its time from: the kernel's monotonic clock, or a ``ManualClock`` that only
/// moves when told to (for tests that cover long spans of time without sleeping).
public enum LoopClock: Sendable {
    case system
    case manual(ManualClock)

    /// The current instant on this clock.
    public var now: LoopInstant { LoopInstant(nanoseconds: nowNanoseconds) }

    @inline(__always)
    var nowNanoseconds: UInt64 {
        switch self {
        case .system: return rlk_monotonic_now()
        case .manual(let clock): return clock.nowNanoseconds
        }
    }
}
