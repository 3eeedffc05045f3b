public import Logging
public import RunLoopKit

/// The stream bus between chat nodes over a shared Redis (Redis 7 Streams through RunLoopRedis):
/// each node publishes what its store committed, and reads what the others published.
///
/// Publishing: ``publish(_:completion:)`` appends the event to one of
/// ``ClusterBusConfiguration/streamCount`` streams (`XADD … MAXLEN ~`), chosen by a stable hash of
/// its conversation, so one conversation's events keep their order. It never waits for Redis: while
/// Redis is unreachable it fails at once with ``ClusterBusError/notConnected``.
///
/// Reading: one connection blocks in `XREAD` over all the streams, from where it left off (at the
/// first start: from each stream's end, no replay of history), and reports each event with
/// ``onReport``. Whenever it cannot prove it read every entry — trimmed by the window before it read
/// them, Redis restarted empty, a stream reset — it reports ``ClusterBusReport/fellBehind(shards:)``
/// and the node re-reads its sessions' inboxes from the store, which is the truth: the bus only saves
/// latency. Events can come twice (a re-read, a reconnect): the receiver drops what it has, by
/// conversation sequence (``ConversationSequencer``).
///
/// Both connections come back by themselves with the configured backoff; failures are logged.
///
/// Threads: create, use and close it on its loop's thread; ``onReport`` and completions run there,
/// from loop callouts, never inside a call of yours. Close it before its loop ends.
public final class ClusterBus {
    public let configuration: ClusterBusConfiguration
    /// What the reader found: events of other nodes, and streams it fell behind in. Set before
    /// ``start()``.
    public var onReport: ((ClusterBusReport) -> Void)? {
        get { reader.onReport }
        set { reader.onReport = newValue }
    }

    private let shards: StreamShards
    private let publisher: BusPublisher
    private let reader: BusReader

    /// Creates a bus that is not connected yet; call ``start()`` next. Must be called on the loop's
    /// thread.
    /// - Parameter modes: where its connections' sources and timers go.
    public init(
        loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common], configuration: ClusterBusConfiguration,
        logger: Logger = Logger(label: "RunLoopChatCluster.bus")
    ) {
        self.configuration = configuration
        shards = StreamShards(keyspace: configuration.keyspace, count: configuration.streamCount)
        publisher = BusPublisher(loop: loop, modes: modes, configuration: configuration, shards: shards, logger: logger)
        reader = BusReader(loop: loop, modes: modes, configuration: configuration, shards: shards, logger: logger)
    }

    /// Connects both sides; publishing works once ``isPublishing``, reading starts once ``isReading``.
    public func start() {
        publisher.start()
        reader.start()
    }

    /// Ends both connections and every reconnect; no report follows, waiting publishes complete with
    /// ``ClusterBusError/redis(_:)``.
    public func close() {
        publisher.close()
        reader.close()
    }

    /// Whether the publishing connection is up.
    public var isPublishing: Bool { publisher.isConnected }
    /// Whether the reader is connected, has proved (or reported) where it stands, and reads.
    public var isReading: Bool { reader.isReading }

    /// Publishes `event` to its stream. `completion` runs on the loop's thread — on its next pass when
    /// it failed without sending (``ClusterBusError/notConnected``,
    /// ``ClusterBusError/tooManyPending(limit:)``), else with Redis's answer or within
    /// ``ClusterBusConfiguration/publishTimeout``.
    public func publish(_ event: ClusterEvent, completion: @escaping (Result<Void, ClusterBusError>) -> Void = { _ in }) {
        publisher.publish(event, completion: completion)
    }

    /// The stream (shard number) `event` goes to: the same on every node.
    public func shard(of event: ClusterEvent) -> Int { shards.shard(of: event) }
}
