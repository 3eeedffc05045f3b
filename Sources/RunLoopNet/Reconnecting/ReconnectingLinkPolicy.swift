public import RunLoopKit

/// How a ``ReconnectingLink`` comes back: the waits between attempts and when a connection counts as
/// stable.
public struct ReconnectingLinkPolicy: Sendable, Equatable {
    /// The waits between attempts; its `maximumAttempts` ends the link in ``ReconnectingLinkState/gaveUp``.
    public var backoff: ReconnectBackoff.Policy
    /// A connection that stayed up this long resets the backoff, so its loss waits the first delay
    /// again; one that drops sooner keeps the waits growing (a server that accepts and then fails).
    public var stableTime: Duration

    /// The defaults: `ReconnectBackoff.Policy`'s defaults, stable after 10 s like the IM client.
    public init(backoff: ReconnectBackoff.Policy = ReconnectBackoff.Policy(), stableTime: Duration = .seconds(10)) {
        precondition(stableTime >= .zero, "a stable time is not negative")
        self.backoff = backoff
        self.stableTime = stableTime
    }
}

/// Where a ``ReconnectingLink`` is.
public enum ReconnectingLinkState: Sendable, Equatable {
    /// Created; ``ReconnectingLink/start()`` not called yet.
    case idle
    /// A connection is being made.
    case connecting
    /// The connection is up: ``ReconnectingLink/connection`` is it.
    case connected
    /// The last attempt failed; the next one starts at this instant of the loop's clock.
    case waiting(until: LoopInstant)
    /// The backoff's attempts are used up: no further attempt.
    case gaveUp
    /// ``ReconnectingLink/close()`` was called.
    case closed
}
