import RunLoopKit

/// A token bucket: `rate` tokens a second, at most `burst` saved up. Pure value on a caller's clock.
struct TokenBucket: Sendable, Equatable {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var last: LoopInstant

    init(rate: Double, burst: Double, now: LoopInstant) {
        precondition(rate > 0 && burst >= 1, "a token bucket needs a positive rate and a burst of at least 1")
        self.rate = rate
        self.burst = burst
        tokens = burst
        last = now
    }

    /// Takes a token; `nil` when one was there, otherwise how long until one will be.
    mutating func take(now: LoopInstant) -> Duration? {
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
    func waitForToken(now: LoopInstant) -> Duration? {
        let available = min(burst, tokens + max(0, (now - last).secondsDouble) * rate)
        return available >= 1 ? nil : .nanoseconds(Int64(((1 - available) / rate * 1e9).rounded(.up)))
    }
}
