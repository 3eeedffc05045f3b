public import RunLoopKit

/// Keeps one connection to a server up: connects, and when the connection ends without being asked
/// to, waits the backoff on the loop's clock and makes a new one — for RunLoopRedis's and
/// RunLoopPostgres's connections, or any ``ReconnectableConnection``.
///
/// Use: create it with a factory that makes an idle connection (configured, callbacks other than
/// `onConnect` and `onClose` set as you like: the link owns those two), set ``onConnect`` and
/// ``onAttemptFailed``, call ``start()``. One connection at a time: a new one is made only after the
/// last one ended. A connection that stayed up for ``ReconnectingLinkPolicy/stableTime`` resets the
/// backoff. ``close()`` ends the current connection and every future attempt.
///
/// Work while down is the caller's decision: ``connection`` is `nil` then, and a command or query
/// should fail fast with the connection's own typed error (`RedisError.closed`,
/// `PostgresError.closed`) rather than wait for a reconnect that may not come. Work in flight when a
/// connection breaks completes with that connection's error, as without the link.
///
/// Threads: confined to its loop's thread, like the connections; callbacks run there, from loop
/// callouts.
public final class ReconnectingLink<Connection: ReconnectableConnection> {
    /// The loop the link and its connections run on.
    public let loop: RunLoop
    /// The connection that is up; `nil` while connecting, waiting, or after the end.
    public private(set) var connection: Connection?
    /// Where the link is.
    public var state: ReconnectingLinkState { machine.state }
    /// Attempts since the last stable connection (the backoff's count).
    public var failedAttempts: Int { machine.backoff.attempts }

    /// Runs on the loop's thread each time a connection comes up (after a restart: re-issue what the
    /// new session needs, such as subscriptions or prepared state).
    public var onConnect: ((Connection) -> Void)?
    /// Runs on the loop's thread each time a connection failed or broke, with why and the wait before
    /// the next attempt (`nil`: the backoff gave up). Log it: it is the line an operator looks for.
    public var onAttemptFailed: ((Connection.Failure, Duration?) -> Void)?

    private let makeConnection: () -> Connection
    private var machine: ReconnectMachine
    /// The connection being made or up; ``connection`` shows it only once up.
    private var current: Connection?
    private let modes: [RunLoop.Mode]
    private lazy var timer = DeadlineTimer(loop: loop, modes: modes, label: "reconnect wait") { [weak self] in
        self?.timerFired()
    }

    /// Creates an idle link; call ``start()`` next. Must be called on the loop's thread.
    /// - Parameters:
    ///   - modes: where its retry timer goes.
    ///   - jitter: where the backoff's jitter comes from (a seeded or constant source in tests).
    ///   - makeConnection: makes a new, idle connection on this loop for each attempt.
    public init(
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        policy: ReconnectingLinkPolicy = ReconnectingLinkPolicy(),
        jitter: JitterSource = .system,
        makeConnection: @escaping () -> Connection
    ) {
        precondition(loop.isCurrentThread, "ReconnectingLink must be created on its run loop's thread")
        precondition(!modes.isEmpty, "ReconnectingLink needs at least one mode")
        self.loop = loop
        self.modes = modes
        self.makeConnection = makeConnection
        machine = ReconnectMachine(policy: policy, jitter: jitter)
    }

    /// Makes the first connection. Calling it again does nothing.
    public func start() {
        checkThread()
        if machine.start() == .connect { connectNew() }
    }

    /// Ends the link: the current connection closes (its pending work completes with its close error,
    /// its `onClose` no longer reaches the link) and no attempt follows. Calling it again does nothing.
    public func close() {
        checkThread()
        machine.close()
        timer.cancel()
        connection = nil
        guard let ending = current else { return }
        current = nil
        ending.onConnect = nil
        ending.onClose = nil
        ending.close()
    }

    private func connectNew() {
        let made = makeConnection()
        current = made
        made.onConnect = { [weak self] connection in self?.connected(connection) }
        made.onClose = { [weak self] connection, failure in self?.ended(connection, failure) }
        made.connect()
    }

    private func connected(_ made: Connection) {
        guard made === current else { return }
        machine.connected(now: loop.now)
        connection = made
        onConnect?(made)
    }

    private func ended(_ made: Connection, _ failure: Connection.Failure) {
        guard made === current else { return }
        current = nil
        connection = nil
        switch machine.connectionEnded(now: loop.now) {
        case .wait(let until, let delay)?:
            timer.arm(at: until)
            onAttemptFailed?(failure, delay)
        case .giveUp?: onAttemptFailed?(failure, nil)
        case .connect?, nil: break
        }
    }

    private func timerFired() {
        if machine.timerFired(now: loop.now) == .connect { connectNew() }
    }

    private func checkThread() {
        precondition(loop.isCurrentThread, "ReconnectingLink used off its run loop's thread")
    }
}
