import Logging
import RunLoopKit
import RunLoopNet
import RunLoopRedis

/// The bus's publishing side: one Redis connection, kept up by a `ReconnectingLink`, that `XADD`s
/// each event to its stream. It never waits for Redis to come back: while no connection is up, or
/// too many `XADD`s wait, a publish fails at once.
///
/// Loop thread only; completions run on the loop's next pass or later, never inside ``publish``.
final class BusPublisher {
    private let configuration: ClusterBusConfiguration
    private let shards: StreamShards
    private let link: ReconnectingLink<RedisConnection>
    private let callbacks: CallbackDeferral
    private var pending = 0

    init(loop: RunLoop, modes: [RunLoop.Mode], configuration: ClusterBusConfiguration, shards: StreamShards, logger: Logger) {
        self.configuration = configuration
        self.shards = shards
        var redis = configuration.redis
        redis.commandTimeout = configuration.publishTimeout
        link = ReconnectingLink(loop: loop, modes: modes, policy: configuration.reconnect) {
            RedisConnection(loop: loop, modes: modes, configuration: redis, logger: logger)
        }
        let name = configuration.clientName("publisher")
        link.onConnect = { connection in connection.send(["CLIENT", "SETNAME", name]) { _ in } }
        link.onAttemptFailed = { error, wait in
            logger.warning("bus publisher lost Redis", metadata: ["error": "\(error)", "retry in": "\(wait.map { "\($0)" } ?? "never")"])
        }
        callbacks = CallbackDeferral(loop: loop, modes: modes, label: "bus publish")
    }

    func start() { link.start() }

    func close() { link.close() }

    var isConnected: Bool { link.connection != nil }

    /// `XADD <stream> MAXLEN ~ <maxLength> * <fields>` of `event`.
    func publish(_ event: ClusterEvent, completion: @escaping (Result<Void, ClusterBusError>) -> Void) {
        callbacks.ownerCall {
            guard let connection = link.connection else {
                return callbacks.run { completion(.failure(.notConnected)) }
            }
            guard pending < configuration.maxPendingPublishes else {
                let limit = configuration.maxPendingPublishes
                return callbacks.run { completion(.failure(.tooManyPending(limit: limit))) }
            }
            pending += 1
            let key = shards.keys[shards.shard(of: event)]
            let command =
                ["XADD", key, "MAXLEN", "~", String(configuration.maxLength), "*"].map { Array($0.utf8) }
                + BusEntry(origin: configuration.nodeID, event: event).fields
            connection.send(bytes: command) { [weak self] result in
                self?.pending -= 1
                completion(result.map { _ in () }.mapError { .redis($0) })
            }
        }
    }
}
