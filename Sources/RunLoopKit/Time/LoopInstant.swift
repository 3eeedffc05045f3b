/// A point on a loop's monotonic clock, in nanoseconds from the clock's origin.
///
/// For the system clock the origin is the kernel's `CLOCK_MONOTONIC` origin, so instants are not
/// affected by wall-clock changes. For a ``ManualClock`` the origin is whatever the test chose.
public struct LoopInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// An instant no deadline ever reaches.
    public static let distantFuture = LoopInstant(nanoseconds: .max)

    public static func < (lhs: LoopInstant, rhs: LoopInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// Saturating: never wraps below zero or past ``distantFuture``.
    public static func + (lhs: LoopInstant, rhs: Duration) -> LoopInstant {
        LoopInstant(nanoseconds: lhs.nanoseconds.adding(nanoseconds: rhs.clampedNanoseconds))
    }

    public static func - (lhs: LoopInstant, rhs: Duration) -> LoopInstant {
        lhs + (.zero - rhs)
    }

    public static func - (lhs: LoopInstant, rhs: LoopInstant) -> Duration {
        if lhs.nanoseconds >= rhs.nanoseconds {
            return .nanoseconds(Int64(clamping: lhs.nanoseconds - rhs.nanoseconds))
        }
        return .zero - .nanoseconds(Int64(clamping: rhs.nanoseconds - lhs.nanoseconds))
    }

    public var description: String {
        nanoseconds == .max ? "distantFuture" : "\(Double(nanoseconds) / 1e9)s"
    }
}

extension UInt64 {
    /// Saturating add of a signed nanosecond count.
    @inline(__always)
    func adding(nanoseconds delta: Int64) -> UInt64 {
        if delta >= 0 {
            let (sum, overflow) = addingReportingOverflow(UInt64(delta))
            return overflow ? .max : sum
        }
        let magnitude = delta.magnitude
        return magnitude >= self ? 0 : self - magnitude
    }
}

extension Duration {
    /// Whole nanoseconds, saturated to Int64's range.
    var clampedNanoseconds: Int64 {
        // Zero (a zero-delay timer, no tolerance) is the common case; `components` divides 128-bit
        // integers, a few hundred instructions. Asked through `attoseconds` (inlined: two words
        // compared), not `== .zero`, whose getter is a call into the standard library (24
        // instructions per zero-delay timer, which asks twice: delay and tolerance).
        if attoseconds == 0 { return 0 }
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return scaled < 0 ? .min : .max }
        return total
    }
}
