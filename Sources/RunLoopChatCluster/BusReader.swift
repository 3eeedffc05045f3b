import Logging
import RunLoopKit
import RunLoopNet
import RunLoopRedis

/// The bus's reading side: one Redis connection, kept up by a `ReconnectingLink`, that blocks in one
/// `XREAD` over every stream and sends the next as soon as a reply came; its decisions are
/// ``BusReaderPositions``'s.
///
/// A reply that does not come within the block plus ``ClusterBusConfiguration/replyGrace`` (Redis
/// stuck, the network gone quiet) closes the connection: the read's late reply would still hold
/// the connection's order, so rather than wait behind it the reader reconnects, and the new
/// connection's checks prove its positions or report it fell behind. Positions only move when a
/// reply is handled, so a reply that never came loses nothing.
///
/// Loop thread only; reports run on it, from loop callouts.
final class BusReader {
    var onReport: ((ClusterBusReport) -> Void)?

    private let configuration: ClusterBusConfiguration
    private let shards: StreamShards
    private let shardOfKey: [String: Int]
    private let logger: Logger
    private let link: ReconnectingLink<RedisConnection>
    private var positions: BusReaderPositions
    /// The connection that passed its checks and reads.
    private weak var reading: RedisConnection?

    init(loop: RunLoop, modes: [RunLoop.Mode], configuration: ClusterBusConfiguration, shards: StreamShards, logger: Logger) {
        self.configuration = configuration
        self.shards = shards
        self.logger = logger
        shardOfKey = Dictionary(uniqueKeysWithValues: shards.keys.enumerated().map { ($1, $0) })
        positions = BusReaderPositions(streamCount: shards.count)
        var redis = configuration.redis
        redis.commandTimeout = configuration.replyGrace
        link = ReconnectingLink(loop: loop, modes: modes, policy: configuration.reconnect) {
            RedisConnection(loop: loop, modes: modes, configuration: redis, logger: logger)
        }
        link.onConnect = { [weak self] connection in self?.connected(connection) }
        link.onAttemptFailed = { [weak self] error, wait in
            self?.positions.attemptFailed()
            logger.warning("bus reader lost Redis", metadata: ["error": "\(error)", "retry in": "\(wait.map { "\($0)" } ?? "never")"])
        }
    }

    func start() { link.start() }

    func close() { link.close() }

    /// Whether a connection passed its checks and reads the streams.
    var isReading: Bool { reading != nil && reading === link.connection }

    // MARK: connecting

    private func connected(_ connection: RedisConnection) {
        connection.send(["CLIENT", "SETNAME", configuration.clientName("reader")]) { _ in }
        connection.send(["INFO", "server"]) { [weak self, weak connection] result in
            guard let self, let connection, self.isCurrent(connection) else { return }
            switch result.map(redisRunID(in:)) {
            case .success(let runID?):
                self.askStatuses(of: Array(0..<self.shards.count), on: connection) { statuses in
                    self.report(fellBehind: self.positions.connected(runID: runID, statuses: statuses))
                    self.reading = connection
                    self.read(on: connection)
                }
            case .success(nil): self.abandon(connection, because: "INFO server named no run_id")
            case .failure(let error): self.abandon(connection, because: "\(error)")
            }
        }
    }

    /// `XINFO STREAM` of each of `shardList`; `completion` gets their statuses in order (`nil`: no
    /// such stream) once all answered, and never runs if one failed (the connection is abandoned).
    private func askStatuses(of shardList: [Int], on connection: RedisConnection, completion: @escaping ([StreamStatus?]) -> Void) {
        var statuses = [StreamStatus?](repeating: nil, count: shardList.count)
        var outstanding = shardList.count
        var failed = false
        for (index, shard) in shardList.enumerated() {
            connection.send(["XINFO", "STREAM", shards.keys[shard]]) { [weak self, weak connection] result in
                guard let self, let connection, !failed, self.isCurrent(connection) else { return }
                switch result {
                case .success(let reply):
                    guard let status = StreamStatus(reply: reply) else {
                        failed = true
                        return self.abandon(
                            connection, because: "XINFO STREAM lacks Redis 7's fields (entries-added, first-entry): Redis 7 is needed")
                    }
                    statuses[index] = status
                case .failure(.server(let message)) where message.contains("no such key"):
                    statuses[index] = nil
                case .failure(let error):
                    failed = true
                    return self.abandon(connection, because: "XINFO STREAM: \(error)")
                }
                outstanding -= 1
                if outstanding == 0 { completion(statuses) }
            }
        }
    }

    // MARK: reading

    private func read(on connection: RedisConnection) {
        let arguments = positions.readArguments(keys: shards.keys, block: configuration.blockTimeout, count: configuration.readCount)
        connection.send(arguments, timeout: configuration.blockTimeout + configuration.replyGrace) { [weak self, weak connection] result in
            guard let self, let connection, self.isCurrent(connection) else { return }
            switch result {
            case .success(let reply):
                guard let batches = StreamBatch.batches(in: reply) else {
                    return self.abandon(connection, because: "XREAD answered \(reply)")
                }
                self.handle(batches, on: connection)
            case .failure(let error): self.abandon(connection, because: "XREAD: \(error)")
            }
        }
    }

    private func handle(_ batches: [StreamBatch], on connection: RedisConnection) {
        var checks: [Int] = []
        for batch in batches {
            guard let shard = shardOfKey[batch.key], let last = batch.entries.last else { continue }
            checks.append(shard)
            positions.read(shard: shard, through: last.id)
            for entry in batch.entries { deliver(entry.fields, id: entry.id, shard: shard) }
        }
        // A report may have closed the bus.
        guard isCurrent(connection) else { return }
        if !checks.isEmpty {
            askStatuses(of: checks, on: connection) { statuses in
                let behind = zip(checks, statuses).filter { shard, status in self.positions.checked(shard: shard, status: status) }
                self.report(fellBehind: behind.map(\.0))
            }
        }
        read(on: connection)
    }

    private func deliver(_ fields: [[UInt8]], id: StreamID, shard: Int) {
        guard let entry = BusEntry(fields: fields) else {
            return logger.warning("bus entry skipped: not one this node reads", metadata: ["stream": "\(shard)", "id": "\(id)"])
        }
        guard configuration.deliversOwnEvents || entry.origin != configuration.nodeID else { return }
        onReport?(.event(entry.event, origin: entry.origin))
    }

    private func report(fellBehind shardList: [Int]) {
        guard !shardList.isEmpty else { return }
        logger.notice("bus reader fell behind: the store has what it missed", metadata: ["streams": "\(shardList.sorted())"])
        onReport?(.fellBehind(shards: shardList.sorted()))
    }

    private func isCurrent(_ connection: RedisConnection) -> Bool { connection === link.connection }

    /// Closes a connection that cannot go on; the link makes a new one after its backoff.
    private func abandon(_ connection: RedisConnection, because reason: String) {
        reading = nil
        // A connection that ended by itself is the link's to report.
        guard connection.state != .closed else { return }
        logger.warning("bus reader reconnects", metadata: ["reason": "\(reason)"])
        connection.close()
    }
}
