import RunLoopIMCore

/// How an ``IMServer`` admits logins, so that a flood of wrong passwords cannot starve real logins and
/// a crowd coming back after a restart gets in without a stampede.
///
/// - A bounded number of checks (``IMServer/authenticator`` calls, or the store's) run at once; the
///   others wait in a queue where an address without recent failures goes before addresses that keep
///   failing, each in arrival order.
/// - Each client address (an IPv4 address, or an IPv6 /64) has a few logins queued, running or held
///   back at once, and a bounded number of connections not logged in yet.
/// - The answer to a wrong password is held back by a delay that doubles with each recent failure of
///   its address or its account, up to a cap; failures age away, and a success clears both. There is
///   no lockout: the right password is answered at once, however many wrong ones came before it.
/// - Every refusal for now (LOGIN_ACK `rateLimited`, ERROR `tooManyConnections`) carries
///   `retry_after_ms`; refusals in a row get times spread out by the server's recent check time, so
///   the refused clients do not come back together.
///
/// A plain value; the server reads it once, at init.
public struct IMLoginLimits: Sendable, Equatable {
    /// Checks running at once. Match it to the threads that run them (the chat node: one per core).
    public var concurrentChecks = 2
    /// Logins from one address queued, being checked, or waiting out a failure delay, at once; the
    /// next gets LOGIN_ACK `rateLimited` with `retry_after_ms`.
    public var pendingChecksPerAddress = 4
    /// Connections from one address that have not logged in yet (`nil`: no limit); the next gets
    /// ERROR `tooManyConnections` with `retry_after_ms` and is closed. One address then cannot hold
    /// every connection slot.
    public var unauthenticatedPerAddress: Int? = 64
    /// A login that would wait longer than this in the queue (estimated from recent check times), or
    /// find `maximumQueuedChecks` ahead of it, is refused for now with `rateLimited` — unless its
    /// address is cleaner than the worst one queued, which is refused instead. Keep it well under the
    /// login timeout, which keeps running while a login waits.
    public var maximumQueueWait: Duration = .seconds(4)
    public var maximumQueuedChecks = 1024
    /// How long the answer to the first recent wrong password is held back; it doubles with each
    /// further recent failure of the same address or account, up to `maximumFailureDelay`. The
    /// address's place stays taken meanwhile, even if the client hangs up.
    public var failureDelay: Duration = .milliseconds(250)
    public var maximumFailureDelay: Duration = .seconds(8)
    /// Failures count for half after this long, a quarter after twice as long, and so on.
    public var failureHalfLife: Duration = .seconds(300)
    /// The shortest `retry_after_ms` in a refusal for now.
    public var minimumRetryAfter: Duration = .milliseconds(250)

    public init() {}
}
