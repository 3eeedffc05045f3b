public import RunLoopNet
public import RunLoopRedis

/// How a ``ClusterBus`` reaches Redis, names and sizes its streams, and reads them.
///
/// Every node of a cluster must agree on ``keyspace`` and ``streamCount``; the rest is each node's own.
/// A value: it may cross threads.
public struct ClusterBusConfiguration: Sendable {
    /// This node's id, written into every entry it publishes (so it can skip its own) and logged.
    public var nodeID: String
    /// Where Redis is. The bus sets each connection's command timeout itself (see
    /// ``publishTimeout`` and ``replyGrace``).
    public var redis: RedisConfiguration
    /// Where the stream keys live: `keyspace.key("stream", "<shard>")`.
    public var keyspace: ClusterKeyspace
    /// How many streams the events are spread over (a conversation's events all go to one).
    public var streamCount: Int
    /// The window: `XADD … MAXLEN ~ <maxLength>` keeps about this many entries per stream (Redis trims
    /// whole blocks, so a few more). A reader that is more than this many entries of one stream behind
    /// — slow, disconnected, or out of its loop for a while — loses the entries trimmed meanwhile and
    /// reports ``ClusterBusReport/fellBehind(shards:)``: its node catches up from the store.
    public var maxLength: Int
    /// How long one `XREAD` waits in Redis for new entries before it is sent again.
    public var blockTimeout: Duration
    /// At most this many entries per stream in one `XREAD` reply.
    public var readCount: Int
    /// How much longer than its block an `XREAD`, and how long a check, may take before the reader
    /// takes Redis for stuck and reconnects (a `DEBUG SLEEP` shorter than this passes unnoticed).
    public var replyGrace: Duration
    /// How long an `XADD` may wait for its reply before it fails with ``ClusterBusError/redis(_:)``.
    public var publishTimeout: Duration
    /// At most this many `XADD`s wait for their replies; more fail at once with
    /// ``ClusterBusError/tooManyPending(limit:)`` rather than queue without bound.
    public var maxPendingPublishes: Int
    /// Whether the reader reports this node's own events too. Off by default: the node delivered them
    /// to its local sessions when its store committed them.
    public var deliversOwnEvents: Bool
    /// How both connections come back after Redis went away.
    public var reconnect: ReconnectingLinkPolicy

    public init(
        nodeID: String, redis: RedisConfiguration, keyspace: ClusterKeyspace = ClusterKeyspace(), streamCount: Int = 8,
        maxLength: Int = 10_000, blockTimeout: Duration = .seconds(5), readCount: Int = 512, replyGrace: Duration = .seconds(5),
        publishTimeout: Duration = .seconds(2), maxPendingPublishes: Int = 10_000, deliversOwnEvents: Bool = false,
        reconnect: ReconnectingLinkPolicy = ReconnectingLinkPolicy()
    ) {
        precondition(streamCount > 0 && maxLength > 0 && readCount > 0 && maxPendingPublishes > 0, "bus sizes are positive")
        self.nodeID = nodeID
        self.redis = redis
        self.keyspace = keyspace
        self.streamCount = streamCount
        self.maxLength = maxLength
        self.blockTimeout = blockTimeout
        self.readCount = readCount
        self.replyGrace = replyGrace
        self.publishTimeout = publishTimeout
        self.maxPendingPublishes = maxPendingPublishes
        self.deliversOwnEvents = deliversOwnEvents
        self.reconnect = reconnect
    }
}

extension ClusterBusConfiguration {
    /// The name a bus connection gives itself (`CLIENT SETNAME`), so an operator's `CLIENT LIST`
    /// tells whose it is: `<prefix>bus-<role>:<node>`, with what Redis refuses in a name (spaces,
    /// control characters) as `_`.
    func clientName(_ role: String) -> String {
        let name = "\(keyspace.prefix)bus-\(role):\(nodeID)"
        return String(name.unicodeScalars.map { (0x21...0x7E).contains($0.value) ? Character($0) : "_" })
    }
}

/// Why a ``ClusterBus/publish(_:completion:)`` failed. The event was committed to the store before
/// it was published, so the node only logs this: the other nodes' sessions catch up from the store.
public enum ClusterBusError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No connection to Redis is up (it is down, or the bus is reconnecting or closed): failed at
    /// once, nothing sent.
    case notConnected
    /// ``ClusterBusConfiguration/maxPendingPublishes`` `XADD`s already wait for Redis: failed at once.
    case tooManyPending(limit: Int)
    /// The `XADD` was sent and failed: timed out, connection lost, or an error reply. It may have
    /// been added all the same.
    case redis(RedisError)

    public var description: String {
        switch self {
        case .notConnected: return "not connected to Redis"
        case .tooManyPending(let limit): return "\(limit) publishes already wait for Redis"
        case .redis(let error): return "redis: \(error)"
        }
    }
}

/// What the bus reader reports to its node.
public enum ClusterBusReport: Equatable, Sendable {
    /// Another node (or this one, with ``ClusterBusConfiguration/deliversOwnEvents``) published
    /// `event`. Events of one conversation come in their publishing order.
    case event(ClusterEvent, origin: String)
    /// The reader cannot prove it read every entry of these streams (shard numbers, ascending): some
    /// were trimmed before it read them, Redis came back empty or is another process, or a stream was
    /// reset. Events may be missing in any conversation of those streams: re-read the local sessions'
    /// inboxes from the store. Reading goes on.
    case fellBehind(shards: [Int])
}
