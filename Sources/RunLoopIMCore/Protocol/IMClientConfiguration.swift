public import RunLoopKit

/// Everything an ``IMClient`` needs to know: who it is, where the server is, and its protocol timing.
public struct IMClientConfiguration: Sendable {
    /// The account to log in as.
    public var user: String
    public var password: String
    /// Free text the server may log.
    public var clientName = "RunLoopIM"
    /// This client program instance (one device), sent in every LOGIN as `client_instance`: a login
    /// with the same user and instance replaces that instance's earlier session at once, so a
    /// half-open connection the server does not know is dead yet cannot count against the user's
    /// session limit. Default: a random UUID made with the configuration, so one client keeps it
    /// across all its reconnects. At most 64 UTF-8 bytes; empty: no replacement.
    public var clientInstance = UUIDText.random()
    /// Log in only to an account that exists (LOGIN's `existing_account_only`): a server that makes
    /// accounts at first login refuses an unknown name for good instead, with
    /// ``IMClientMachine/isAccountUnknown`` set — so a client can have the person confirm a new
    /// account's password before it is made.
    public var existingAccountOnly = false
    /// The owner reads PRESENCE_BATCH frames among its notices (``IMClient/onNotice``), so every LOGIN
    /// asks for them (`presence_batches`): a server that sends them then carries this session's
    /// presence in far fewer frames. Off by default: an owner that knows only PRESENCE would miss
    /// the notices in a batch. RunLoopChat's `ChatClient` reads them and turns this on for its connection.
    public var readsPresenceBatches = false
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
    /// How long a session must stay online before a drop starts the backoff from its first attempt
    /// again. A server that accepts the login and kills the session at once (it is overloaded, or
    /// refuses this client after logging it in) would otherwise be hammered at the first delay.
    public var stableSessionTime: Duration = .seconds(10)
    /// Resend a message not acknowledged within this.
    public var ackTimeout: Duration = .seconds(15)
    /// Sends of one message on live connections before giving up on it (Yixin: 3 × 15 s).
    public var maximumSendAttempts = 3
    /// Unsettled messages the client holds (queued, in flight, being abandoned) before refusing sends.
    public var outboxLimit = 1_000
    /// The largest frame body accepted from the server before it announces its own limit at login
    /// (``IMClientMachine/receiveLimit``); until then also what the client assumes the server accepts:
    /// a SEND body may be up to this less ``maximumMessageOverhead`` bytes.
    public var maximumFrameBody = 64 * 1024
    /// Incoming message ids remembered for de-duplication.
    public var deduplicationWindow = 10_000
    /// How long ``IMClient/close()`` may spend settling with the server before it closes anyway.
    public var closeTimeout: Duration = .seconds(5)
    /// Where reconnect jitter comes from (inject `JitterSource.seeded(_:)` in tests).
    public var jitter = JitterSource.system

    /// The longest message id, in UTF-8 bytes: a longer one is refused by ``IMClient/send(_:to:id:)``
    /// (the server refuses it too, with SEND_ACK `badRequest`).
    public static let maximumMessageIDBytes = 128

    /// What the server adds to a SEND body to make the DELIVER (`from`, `seq`, `sent_at_ms`): until a
    /// LOGIN_ACK announces `SessionLimits.max_send_body`, the client assumes a SEND body may be
    /// ``maximumFrameBody`` less this.
    public static let maximumMessageOverhead = 128

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}
