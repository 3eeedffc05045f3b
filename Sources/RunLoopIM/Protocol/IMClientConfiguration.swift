/// Everything an ``IMClient`` needs to know: who it is, where the server is, and its protocol timing.
public struct IMClientConfiguration: Sendable {
    /// The account to log in as.
    public var user: String
    public var password: String
    /// Free text the server may log.
    public var clientName = "RunLoopIM"
    /// How the client proves liveness while idle. Announced to the server as its keepalive.
    public var heartbeat: HeartbeatMode = .fixed(.seconds(30))
    /// Ping-pong: how long anything that expects an answer (heartbeat, message, login) may wait for
    /// any frame from the server before the connection is declared dead. Every frame that arrives
    /// restarts the wait while something is still expected.
    public var answerTimeout: Duration = .seconds(10)
    /// Connecting plus logging in must finish within this.
    public var loginTimeout: Duration = .seconds(10)
    /// When to try again after a drop.
    public var backoff = ReconnectBackoff.Policy()
    /// Resend a message not acknowledged within this.
    public var ackTimeout: Duration = .seconds(15)
    /// Sends of one message on live connections before giving up on it (Yixin: 3 × 15 s).
    public var maximumSendAttempts = 3
    /// Unsettled messages the client holds (queued, in flight, being abandoned) before refusing sends.
    public var outboxLimit = 1_000
    /// The largest frame body accepted from the server.
    public var maximumFrameBody = 64 * 1024
    /// Incoming message ids remembered for de-duplication.
    public var deduplicationWindow = 10_000
    /// How long ``IMClient/close()`` may spend settling with the server before it closes anyway.
    public var closeTimeout: Duration = .seconds(5)
    /// Where reconnect jitter comes from (inject ``JitterSource/seeded(_:)`` in tests).
    public var jitter = JitterSource.system

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}
