import RunLoopKit

/// A token bucket: `rate` tokens a second, at most `burst` saved up. Pure value on a caller's clock.
/// The rate and burst come with each call, not kept here: a server's sessions share them (their
/// settings), and a copy in each session's bucket cost it 16 bytes. A bucket must be asked with the
/// same rate and burst every time.
struct TokenBucket: Sendable, Equatable {
    private var tokens: Double
    private var last: LoopInstant

    /// A full bucket of `burst` tokens at `now`, to be taken from at `rate` (checked here when given:
    /// `nil` for a bucket nobody takes from, such as a session's without a SEND limit).
    init(rate: Double?, burst: Double, now: LoopInstant) {
        if let rate { precondition(rate > 0 && burst >= 1, "a token bucket needs a positive rate and a burst of at least 1") }
        tokens = burst
        last = now
    }

    /// Takes a token; `nil` when one was there, otherwise how long until one will be.
    mutating func take(now: LoopInstant, rate: Double, burst: Double) -> Duration? {
        if now > last {
            tokens = min(burst, tokens + (now - last).secondsDouble * rate)
            last = now
        }
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return .nanoseconds(Int64(((1 - tokens) / rate * 1e9).rounded(.up)))
    }

    /// How long until a token is due, without taking one.
    func waitForToken(now: LoopInstant, rate: Double, burst: Double) -> Duration? {
        let available = min(burst, tokens + max(0, (now - last).secondsDouble) * rate)
        return available >= 1 ? nil : .nanoseconds(Int64(((1 - available) / rate * 1e9).rounded(.up)))
    }
}
