import CLibpq
public import Logging
public import RunLoopKit
public import RunLoopNet

/// One PostgreSQL connection driven by a ``RunLoop``: libpq's asynchronous API with its socket as a
/// port source, in pipeline mode, with every deadline on the loop's clock. No libpq call it makes
/// blocks the loop's thread: a host name is resolved off the loop and handed to libpq as `hostaddr`;
/// connecting is `PQconnectStartParams` and `PQconnectPoll`; once connected the connection is
/// non-blocking and its output is flushed as the socket takes it.
///
/// Queries queued in one pass of the loop go out together, ended by one pipeline sync, in one
/// write; each completes on its own, in the order queued, once its outcome is final. The statements
/// of one sync run in one implicit transaction on the server, so a result is held until its segment
/// commits; a statement the server refuses fails alone, and the others of its segment (rolled back
/// or skipped) go out again by themselves. Parameters and results travel as text.
///
/// Use: create it, set the callbacks, call ``connect()``; queries may be queued at once (they wait
/// for the connection). Completions and callbacks run on the loop's thread from a loop callout,
/// never inside a method you called (those are deferred to the loop's next pass), so a completion
/// may queue the next query or close the connection.
///
/// Every pending query completes exactly once, with its rows or a ``PostgresError``, whatever
/// happens: the server refusing it, the connection breaking, a timeout, ``close()``, or the
/// connection let go before ``connect()`` (``PostgresError/closed``, on the loop's next pass).
///
/// Lifetime: from ``connect()`` until it closes, the loop keeps the connection alive. A connection
/// that failed or broke stays closed: to come back by itself with a backoff, let RunLoopNet's
/// `ReconnectingLink` own it (it makes a new connection per attempt).
///
/// Threads: confined to its loop's thread (checked with a precondition); from another thread, hop
/// with ``RunLoop/perform(inModes:label:_:)``.
public final class PostgresConnection {
    /// Where a connection is in its life.
    public enum State: Sendable, Equatable {
        /// Created; ``connect()`` not called yet.
        case idle
        /// Resolving, connecting or authenticating.
        case connecting
        /// Connected: queries go out.
        case ready
        /// Closed; ``closeReason`` says why.
        case closed
    }

    /// The loop the connection runs on.
    public let loop: RunLoop
    /// The modes its sources, timer and sends are in.
    public let modes: [RunLoop.Mode]
    /// Where it connects.
    public let configuration: PostgresConfiguration
    /// Where it logs (failures at `debug`: the owner decides what matters).
    public var logger: Logger

    /// Runs once when the connection is ready for queries.
    public var onConnect: ((PostgresConnection) -> Void)?
    /// Runs exactly once when the connection closes, for whatever reason: ``PostgresError/closed``
    /// after ``close()``, else why it failed or broke. Pending queries have completed before it runs.
    public var onClose: ((PostgresConnection, PostgresError) -> Void)?

    /// Where the connection is in its life.
    public var state: State {
        switch machine.phase {
        case .idle: return .idle
        case .resolving, .connecting: return .connecting
        case .ready: return .ready
        case .closed: return .closed
        }
    }

    /// Why it closed; `nil` while open.
    public var closeReason: PostgresError? {
        if case .closed(let reason) = machine.phase { reason } else { nil }
    }

    /// How many pipeline syncs went out: one per segment, each carrying every query queued since the
    /// previous one left (and those that go out again after a failed statement).
    public internal(set) var pipelineSyncCount = 0
    /// How many statements went out (a transaction's BEGIN and COMMIT among them; one sent again
    /// after a failed statement counts again): what a caller that batches its reads counts to check
    /// a batch stays one statement.
    public internal(set) var statementCount = 0

    let resolver: any HostResolver
    var machine: PostgresConnectionMachine
    var pipeline = PostgresPipeline<PostgresRows>()
    var completions: [Int: (Result<[PostgresRows], PostgresError>) -> Void] = [:]
    var nextRequestID = 0
    /// The host's addresses from the resolver, for libpq's `hostaddr`.
    var resolvedAddresses: [String] = []
    /// libpq's connection (`PGconn *`); `nil` before connecting and after closing.
    var connection: OpaquePointer?
    var socketSource: RunLoopPortSource?
    var writeSource: RunLoopPortSource?
    /// The machine's next deadline; made at the first one.
    var deadlineTimer: DeadlineTimer?
    var sendScheduled = false
    /// The loop's hold on a connection between ``connect()`` and its close.
    var keepAlive: PostgresConnection?
    lazy var callbacks = CallbackDeferral(loop: loop, modes: modes, label: "postgres callbacks")

    /// Creates an idle connection; call ``connect()`` next. Must be called on the loop's thread.
    /// - Parameters:
    ///   - modes: where its sources, timer and sends go; ``RunLoop/Mode/common`` keeps it working in
    ///     any common mode.
    ///   - resolver: resolves a host name off the loop (the system resolver by default).
    public init(
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        configuration: PostgresConfiguration,
        resolver: any HostResolver = SystemResolver(),
        logger: Logger = Logger(label: "RunLoopPostgres")
    ) {
        precondition(loop.isCurrentThread, "PostgresConnection must be created on its run loop's thread")
        precondition(!modes.isEmpty, "PostgresConnection needs at least one mode")
        self.loop = loop
        self.modes = modes
        self.configuration = configuration
        self.resolver = resolver
        self.logger = logger
        machine = PostgresConnectionMachine(connectTimeout: configuration.connectTimeout, queryTimeout: configuration.queryTimeout)
    }

    deinit {
        if let connection { PQfinish(connection) }
        // Only a connection that never connected can go with queries pending (connecting holds it
        // alive until its close completed them): they still complete, on the loop's next pass, since
        // running them inside the release that dropped it would call back into its owner's code.
        let pending = completions.sorted { $0.key < $1.key }.map(\.value)
        guard !pending.isEmpty else { return }
        try? loop.performFromLoopThread(inModes: modes, label: "postgres dropped") {
            for completion in pending { completion(.failure(.closed)) }
        }
    }

    /// Starts connecting. The outcome comes on the loop's thread: ``onConnect``, or ``onClose`` with
    /// ``PostgresError/connectionFailed(_:)`` (libpq's or the resolver's message) or
    /// ``PostgresError/timedOut(_:)`` `.connect`. Calling it again does nothing.
    public func connect() {
        checkThread()
        callbacks.ownerCall {
            guard machine.phase == .idle else { return }
            keepAlive = self
            let needsResolving = !configuration.isSocketDirectory && SocketAddress(ip: configuration.host, port: configuration.port) == nil
            perform(machine.start(needsResolving: needsResolving, now: loop.now))
        }
    }

    /// Queues one statement; `$1`, `$2`, … in `sql` take `parameters` (text; `nil` is NULL).
    ///
    /// `completion` runs once on the loop's thread with the statement's rows (empty for most
    /// statements that change data) or its error. Transaction control (BEGIN, COMMIT, ROLLBACK,
    /// SAVEPOINT, …) fails with ``PostgresError/protocolMisuse(_:)``: use
    /// ``transaction(_:completion:)``. After the connection closed, the query fails with
    /// ``PostgresError/closed``.
    public func query(
        _ sql: String, _ parameters: [String?] = [], completion: @escaping (Result<PostgresRows, PostgresError>) -> Void
    ) {
        let statement = PostgresStatement(sql, parameters)
        if statement.controlsTransaction { return refuse(.protocolMisuse("transaction control through query: use transaction"), completion) }
        enqueue(.statement, [statement]) { result in completion(result.map { $0[0] }) }
    }

    /// Runs `statements` in one transaction: BEGIN, the statements, COMMIT, in one pipeline.
    ///
    /// `completion` runs once on the loop's thread: with each statement's rows after the COMMIT
    /// succeeded; with the first statement's error that the server refused (the transaction rolled
    /// back); with ``PostgresError/commitOutcomeUnknown(_:)`` when the connection ended after the
    /// COMMIT was sent and before its answer came; with the connection's error when it ended before.
    public func transaction(
        _ statements: [PostgresStatement], completion: @escaping (Result<[PostgresRows], PostgresError>) -> Void
    ) {
        if let misuse = statements.first(where: \.controlsTransaction) {
            return refuse(.protocolMisuse("transaction control inside a transaction: \(misuse.sql)"), completion)
        }
        enqueue(.transaction, statements, completion: completion)
    }

    /// Closes the connection at once: the socket goes, and every pending query and transaction
    /// completes with ``PostgresError/closed`` (a transaction whose COMMIT was sent with
    /// ``PostgresError/commitOutcomeUnknown(_:)``) on the loop's next pass, then ``onClose`` runs.
    /// Calling it again does nothing.
    public func close() {
        checkThread()
        callbacks.ownerCall { perform(machine.close(.closed)) }
    }

    private func enqueue(
        _ kind: PostgresPipeline<PostgresRows>.Kind, _ statements: [PostgresStatement],
        completion: @escaping (Result<[PostgresRows], PostgresError>) -> Void
    ) {
        if machine.isClosed { return refuse(.closed, completion) }
        checkThread()
        callbacks.ownerCall {
            nextRequestID += 1
            completions[nextRequestID] = completion
            pipeline.enqueue(id: nextRequestID, kind: kind, statements: statements)
            scheduleSend()
        }
    }

    /// Completes a request that never enters the pipeline, on the loop's next pass.
    private func refuse<Value>(_ error: PostgresError, _ completion: @escaping (Result<Value, PostgresError>) -> Void) {
        checkThread()
        callbacks.ownerCall { callbacks.run { completion(.failure(error)) } }
    }

    func checkThread() {
        precondition(loop.isCurrentThread, "PostgresConnection used off its run loop's thread")
    }
}
