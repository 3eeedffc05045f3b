public import RunLoopKit

/// How long a node's lease lasts and how often a ``NodePresence`` refreshes it, retries, and looks
/// for dead nodes — every interval on the loop's clock.
///
/// The lease period bounds how stale presence can be: a node that dies is reaped by another within
/// ``ttl`` + ``reapInterval`` (12 s by default) plus a few commands' time. A value: it may cross threads.
public struct NodeLeasePolicy: Sendable, Equatable {
    /// How long a lease lives without a refresh (`SET … PX`).
    public var ttl: Duration
    /// How often a held lease is extended: a third of ``ttl`` by default, so two refreshes may fail
    /// before it lapses.
    public var refreshInterval: Duration
    /// How soon a failed refresh or join is tried again.
    public var retryInterval: Duration
    /// How often a node looks for registered nodes whose lease is gone: a fifth of ``ttl`` by default,
    /// so a dead node's users go offline soon after its lease lapses (two reads a time, cheap).
    public var reapInterval: Duration
    /// How long any presence command may wait for Redis before the node decides without it (a login
    /// never waits longer than this for its admission).
    public var commandTimeout: Duration
    /// The waits between attempts to reconnect to Redis (jittered, so nodes cut off together do not
    /// come back together).
    public var reconnect: ReconnectBackoff.Policy

    /// - Parameters:
    ///   - ttl: 10 s by default.
    ///   - refreshInterval, retryInterval, reapInterval, commandTimeout: `ttl / 3`, `ttl / 10`,
    ///     `ttl / 5` and `ttl / 5` unless given.
    ///   - reconnect: unless given, from `retryInterval` growing to `refreshInterval`: a node comes
    ///     back well within a lease when Redis does.
    /// - Precondition: every interval is positive, and a refresh comes before the lease lapses.
    public init(
        ttl: Duration = .seconds(10),
        refreshInterval: Duration? = nil,
        retryInterval: Duration? = nil,
        reapInterval: Duration? = nil,
        commandTimeout: Duration? = nil,
        reconnect: ReconnectBackoff.Policy? = nil
    ) {
        self.ttl = ttl
        self.refreshInterval = refreshInterval ?? ttl / 3
        self.retryInterval = retryInterval ?? ttl / 10
        self.reapInterval = reapInterval ?? ttl / 5
        self.commandTimeout = commandTimeout ?? ttl / 5
        self.reconnect =
            reconnect ?? ReconnectBackoff.Policy(initialDelay: self.retryInterval, maximumDelay: max(self.retryInterval, self.refreshInterval))
        precondition(
            [self.ttl, self.refreshInterval, self.retryInterval, self.reapInterval, self.commandTimeout].allSatisfy { $0 > .zero },
            "lease intervals are positive")
        precondition(self.refreshInterval < ttl, "a lease must be refreshed before it lapses")
    }

    /// ``ttl`` in whole milliseconds, as `PX` and `PEXPIRE` take it.
    var ttlMilliseconds: Int64 {
        let (seconds, attoseconds) = ttl.components
        return max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
