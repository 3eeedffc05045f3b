#if canImport(Glibc)
import Glibc
#endif

/// When to try again after a connection drops: exponential, capped, jittered, bounded or not.
///
/// Attempt *n* (from 1) waits `min(cap, initial × multiplier^(n−1))`, shortened by up to `jitter` of
/// itself at random, so clients cut off together by a server restart do not come back together.
/// Its owner resets it to attempt 1 once a connection has stayed up for a stable time (the IM
/// client's `stableSessionTime`, RunLoopNet's `ReconnectingLinkPolicy.stableTime`).
/// Pure value; the caller owns the clock.
public struct ReconnectBackoff: Sendable {
    /// The settings of a backoff schedule.
    public struct Policy: Sendable, Equatable {
        /// The longest wait of the first attempt.
        public var initialDelay: Duration
        /// Growth per attempt (≥ 1).
        public var multiplier: Double
        /// No wait is longer than this.
        public var maximumDelay: Duration
        /// The share of each wait taken off at random, 0 (none) to 1 (anywhere from zero to the full wait).
        public var jitter: Double
        /// Attempts after which the client gives up; `nil`: never.
        public var maximumAttempts: Int?

        /// The defaults: 0.5 s, doubling, capped at 30 s, up to half of each wait taken off, unbounded —
        /// between Socket.IO's 1 s → 5 s and python-websockets' 90 s cap.
        public init(
            initialDelay: Duration = .milliseconds(500),
            multiplier: Double = 2,
            maximumDelay: Duration = .seconds(30),
            jitter: Double = 0.5,
            maximumAttempts: Int? = nil
        ) {
            precondition(multiplier >= 1, "a backoff multiplier below 1 would shrink the waits")
            precondition((0...1).contains(jitter), "jitter is a share of the wait, 0...1")
            precondition(maximumAttempts.map { $0 > 0 } ?? true, "maximumAttempts must be positive")
            precondition(initialDelay >= .zero && maximumDelay >= initialDelay, "delays must satisfy 0 ≤ initial ≤ maximum")
            self.initialDelay = initialDelay
            self.multiplier = multiplier
            self.maximumDelay = maximumDelay
            self.jitter = jitter
            self.maximumAttempts = maximumAttempts
        }
    }

    public let policy: Policy
    /// Attempts made since the last reset.
    public private(set) var attempts = 0

    public init(policy: Policy) { self.policy = policy }

    /// The un-jittered wait before attempt `attempt` (from 1).
    public func ceiling(forAttempt attempt: Int) -> Duration {
        let initial = Double(policy.initialDelay.nanosecondsClamped)
        let cap = Double(policy.maximumDelay.nanosecondsClamped)
        let grown = initial * pow(policy.multiplier, Double(max(0, attempt - 1)))
        return .nanoseconds(Int64(min(cap, grown.isFinite ? grown : cap)))
    }

    /// Counts an attempt and returns how long to wait before making it, or `nil` when the policy's
    /// attempts are used up.
    public mutating func nextDelay(jitter source: JitterSource) -> Duration? {
        if let limit = policy.maximumAttempts, attempts >= limit { return nil }
        attempts += 1
        let ceiling = Double(ceiling(forAttempt: attempts).nanosecondsClamped)
        let cut = ceiling * policy.jitter * source.next()
        return .nanoseconds(Int64(ceiling - cut))
    }

    /// After a session that lasted (or the network came back): the next drop starts from the first
    /// attempt again.
    public mutating func reset() { attempts = 0 }
}

extension Duration {
    /// Whole nanoseconds, clamped to `Int64`; negative durations are zero.
    package var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        if seconds >= Int64.max / 1_000_000_000 { return .max }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    package var secondsDouble: Double { Double(nanosecondsClamped) / 1e9 }
}
