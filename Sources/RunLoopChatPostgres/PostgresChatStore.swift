public import Logging
public import RunLoopChat
import RunLoopIM
public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet
public import RunLoopPostgres

/// The chat's store in PostgreSQL, which several chat nodes share: messages with their store-wide
/// `seq` and per-conversation `conversationSeq`, each member's cursor (the inbox), abandoned ids,
/// rooms and history, accounts. The schema is ``ChatSchema``'s; run ``ChatSchema/migrate(on:completion:)``
/// (`chat-node migrate`) before a node uses it, and ``ChatSchema/check(on:completion:)`` at start.
///
/// It has the asynchronous store protocol's methods (RunLoopIM's `IMServerStore`, RunLoopChat's
/// `ChatStore`): each operation is one pipelined round trip — a change is one transaction sent as
/// one pipeline — and its completion runs once on the loop's thread, after the commit or the failure.
/// With no connection up (a ``ReconnectingLink`` between attempts) it fails at once, before returning,
/// rather than wait for a reconnect that may not come.
///
/// Failures: a send the database did not confirm is answered `.refused(.internalError)`, which the
/// client takes as temporary and resends under the same id — safe because storing is idempotent per
/// (sender, id), also when the first commit landed after all. Reads fail with a
/// `IMStoreFailure` (inbox, abandon) or `IMStatusCode.internalError` (rooms, history).
/// Temporary failures are logged at `warning`, others (a refused statement: a bug or a broken
/// schema) at `error`.
///
/// Threads: confined to its loop's thread, like its connection.
public final class PostgresChatStore: ChatStore {
    /// How ``authenticate(_:completion:)`` decides a login.
    public enum Authentication: Sendable, Equatable {
        /// Any name logs in with any password (tests, demos, a deployment that authenticates
        /// before the store).
        case open
        /// The `accounts` table: the name in any case, the password checked against its scrypt
        /// hash off the loop.
        case accounts
    }

    /// The loop its connection runs on.
    public let loop: RunLoop
    public let authentication: Authentication
    /// Whether a direct message to a name that never logged in and has no account is refused with
    /// `unknownRecipient`. On by default with ``Authentication/accounts``.
    public var requiresKnownRecipients: Bool
    public var logger: Logger

    /// Runs when a new room message committed, just before ``store(_:from:nowMilliseconds:completion:)``
    /// completes, with the room's membership number at that commit (`conversations.membership_seq`,
    /// read under the room row's lock the message's transaction holds): every JOIN and LEAVE of the
    /// room numbered at or below it committed before the message. A cluster node puts it in the
    /// message's bus entry, so that another node knows which changes it must have seen before it
    /// passes the message on. Not for a resend, whose first commit it cannot see. Loop thread.
    public var onRoomMessageCommitted: ((_ message: IMMessage, _ membershipSeq: UInt64) -> Void)?

    private let source: Source
    lazy var passwordWorkers = PasswordWorkers(count: passwordCheckThreads, loop: loop)
    private let passwordCheckThreads: Int

    private enum Source {
        case connection(PostgresConnection)
        case link(ReconnectingLink<PostgresConnection>)
    }

    /// A store over one connection (which it keeps). Loop thread only.
    /// - Parameter passwordCheckThreads: threads for scrypt checks with ``Authentication/accounts``.
    public convenience init(
        connection: PostgresConnection, authentication: Authentication = .accounts, passwordCheckThreads: Int = 2,
        logger: Logger = Logger(label: "RunLoopChat.postgres")
    ) {
        self.init(.connection(connection), loop: connection.loop, authentication, passwordCheckThreads, logger)
    }

    /// A store over whichever connection `link` has up (it keeps the link). Loop thread only.
    public convenience init(
        link: ReconnectingLink<PostgresConnection>, authentication: Authentication = .accounts, passwordCheckThreads: Int = 2,
        logger: Logger = Logger(label: "RunLoopChat.postgres")
    ) {
        self.init(.link(link), loop: link.loop, authentication, passwordCheckThreads, logger)
    }

    private init(_ source: Source, loop: RunLoop, _ authentication: Authentication, _ passwordCheckThreads: Int, _ logger: Logger) {
        self.source = source
        self.loop = loop
        self.authentication = authentication
        self.passwordCheckThreads = passwordCheckThreads
        self.logger = logger
        requiresKnownRecipients = authentication == .accounts
    }

    /// The connection to use now; `nil` while a link has none up.
    private var connection: PostgresConnection? {
        switch source {
        case .connection(let connection): return connection
        case .link(let link): return link.connection
        }
    }

    /// Runs `statements` as one transaction; a failure comes back logged, as what `operation` names
    /// (at `debug` when the caller `expects` it and handles it), with the database's error (a SEND
    /// tells a race from other failures by it).
    func transaction(
        _ statements: [PostgresStatement], _ operation: @autoclosure () -> String,
        expecting expects: @escaping (PostgresError) -> Bool,
        completion: @escaping (Result<[PostgresRows], PostgresError>) -> Void
    ) {
        guard let connection else { return completion(.failure(failed(operation(), .closed))) }
        let operation = operation()
        connection.transaction(statements) { [weak self] result in
            completion(result.mapError { cause in self?.failed(operation, cause, expected: expects(cause)) ?? cause })
        }
    }

    /// Runs `statements` as one transaction; a failure comes back logged, as the server's protocol
    /// names it.
    func transaction(
        _ statements: [PostgresStatement], _ operation: @autoclosure () -> String,
        completion: @escaping (Result<[PostgresRows], IMStoreFailure>) -> Void
    ) {
        let operation = operation()
        transaction(statements, operation, expecting: { _ in false }) { result in
            completion(result.mapError { IMStoreFailure(operation, cause: $0) })
        }
    }

    /// Runs one statement outside a transaction; a failure comes back logged.
    func query(
        _ statement: PostgresStatement, _ operation: @autoclosure () -> String,
        completion: @escaping (Result<PostgresRows, IMStoreFailure>) -> Void
    ) {
        guard let connection else { return completion(.failure(IMStoreFailure(operation(), cause: failed(operation(), .closed)))) }
        let operation = operation()
        connection.query(statement.sql, statement.parameters) { [weak self] result in
            completion(result.mapError { IMStoreFailure(operation, cause: self?.failed(operation, $0) ?? $0) })
        }
    }

    /// Logs the failure of `operation` once, at the level it deserves, and returns its cause.
    func failed(_ operation: String, _ cause: PostgresError, expected: Bool = false) -> PostgresError {
        let failure = IMStoreFailure(operation, cause: cause)
        if expected {
            logger.debug("\(failure)")
        } else if failure.isTemporary {
            logger.warning("\(failure)")
        } else {
            logger.error("\(failure)")
        }
        return cause
    }
}
