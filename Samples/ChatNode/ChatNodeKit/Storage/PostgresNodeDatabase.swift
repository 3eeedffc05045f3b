public import Logging
public import RunLoopChatPostgres
import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet
public import RunLoopPostgres

/// A node's PostgreSQL: one connection kept up by a ``ReconnectingLink`` (the existing backoff), the
/// chat store over it, and the schema checked on every connection.
///
/// While no connection is up the node keeps serving: the store fails at once, so a SEND is answered
/// `internalError` and its client resends it after a moment (idempotent per sender and id). Each
/// failed attempt is one log line with the wait before the next. A connection that finds a schema
/// this node must not use (older: run `chat-node migrate`; newer: upgrade the node) reports it
/// through ``onIncompatibleSchema``.
///
/// Loop thread only.
public final class PostgresNodeDatabase {
    /// The query timeout used when the configuration sets none: a statement waiting on a lock (or a
    /// server that went silent) ends the connection after it, and the link reconnects.
    public static let defaultQueryTimeout: Duration = .seconds(10)

    /// The one connection, reconnected with the policy's backoff after each failure.
    public let link: ReconnectingLink<PostgresConnection>
    /// The chat store over ``link`` (accounts checked in its `accounts` table).
    public let store: PostgresChatStore
    /// Where it connects, with ``defaultQueryTimeout`` filled in.
    public let configuration: PostgresConfiguration
    /// Runs on the loop's thread when a connection found a schema version this node cannot run against.
    public var onIncompatibleSchema: ((ChatSchemaError) -> Void)?
    /// Runs on the loop's thread once the first connection attempt settled: up with a good schema,
    /// failed (the node serves meanwhile), or an incompatible schema (also reported through
    /// ``onIncompatibleSchema``).
    var onFirstOutcome: ((Result<Void, ChatSchemaError>) -> Void)?
    private let logger: Logger

    /// An idle link; ``start()`` connects.
    public init(
        configuration: PostgresConfiguration, loop: RunLoop, policy: ReconnectingLinkPolicy = ReconnectingLinkPolicy(),
        passwordCheckThreads: Int, logger: Logger
    ) {
        var configuration = configuration
        configuration.queryTimeout = configuration.queryTimeout ?? Self.defaultQueryTimeout
        self.configuration = configuration
        self.logger = logger
        link = ReconnectingLink(loop: loop, policy: policy) { PostgresConnection(loop: loop, configuration: configuration, logger: logger) }
        store = PostgresChatStore(link: link, authentication: .accounts, passwordCheckThreads: passwordCheckThreads, logger: logger)
        let address = PostgresURL.redacted(configuration)
        link.onConnect = { [weak self] connection in self?.connected(connection, address: address) }
        link.onAttemptFailed = { [weak self] failure, wait in
            guard let self else { return }
            let next =
                wait.map { "trying again in \($0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000) ms" } ?? "giving up"
            // libpq's messages span lines ("…\n\tIs the server running…"): one line per failure.
            let cause = "\(failure)".split(whereSeparator: \.isNewline).map { $0.trimmed(of: "\t ") }.joined(separator: " ")
            self.logger.error("PostgreSQL \(address): \(cause); logins and SENDs are refused as temporary until it is back; \(next)")
            self.settle(.success(()))
        }
    }

    /// Connects (and keeps reconnecting). Calling it again does nothing.
    public func start() { link.start() }

    /// Closes the connection and stops reconnecting.
    public func close() { link.close() }

    /// Runs one statement on the connection that is up; fails at once while none is.
    func query(_ statement: PostgresStatement, _ operation: String, completion: @escaping (Result<PostgresRows, IMStoreFailure>) -> Void) {
        guard let connection = link.connection else { return completion(.failure(failure(operation, .closed))) }
        connection.query(statement.sql, statement.parameters) { [weak self] result in
            completion(result.mapError { self?.failure(operation, $0) ?? IMStoreFailure(operation, reason: "\($0)") })
        }
    }

    private func failure(_ operation: String, _ cause: PostgresError) -> IMStoreFailure {
        let failure = IMStoreFailure(operation, reason: "\(cause)")
        logger.warning("\(failure)")
        return failure
    }

    private func connected(_ connection: PostgresConnection, address: String) {
        logger.info("PostgreSQL \(address) connected")
        ChatSchema.check(on: connection) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.settle(.success(()))
            case .failure(.database(let error)):
                // The connection failed under the check; the link reconnects and checks again.
                self.logger.warning("PostgreSQL \(address): schema version not read: \(error)")
            case .failure(let refusal):
                self.logger.critical("PostgreSQL \(address): \(refusal)")
                self.settle(.failure(refusal))
                self.onIncompatibleSchema?(refusal)
            }
        }
    }

    private func settle(_ outcome: Result<Void, ChatSchemaError>) {
        guard let onFirstOutcome else { return }
        self.onFirstOutcome = nil
        onFirstOutcome(outcome)
    }
}
