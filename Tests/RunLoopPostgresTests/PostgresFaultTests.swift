import Glibc
import RunLoopKit
import RunLoopNet
import RunLoopPostgres
import RunLoopTesting
import Testing

/// What happens when things go wrong: the server killed, missing, slow; the owner closing mid-query.
@Suite struct PostgresFaultTests {
    @Test func closeMidQueryCompletesTheQueryOnceWithAnError() async throws {
        let server = try await PostgresServer.start()
        let (results, closeReasons) = try await onLoopThread {
            let connection = try connect(to: server)
            var closeReasons: [PostgresError] = []
            connection.onClose = { _, reason in closeReasons.append(reason) }
            let sleeping = connection.outcome("SELECT pg_sleep(60)")
            try spin(connection.loop) { connection.pipelineSyncCount == 1 }
            connection.close()
            connection.close()
            try spin(connection.loop) { !closeReasons.isEmpty }
            // A few more passes: nothing completes twice.
            try connection.loop.run(.default, timeout: .milliseconds(20))
            return (sleeping.results.map(\.failure), closeReasons)
        }
        #expect(results == [.closed])
        #expect(closeReasons == [.closed])
    }

    @Test func theServerKilledMidQueryFailsEveryPendingQueryOnceAndAnInFlightCommitIsUnknown() async throws {
        let server = try await PostgresServer.start()
        let (sleeping, transaction, unsent, closeReason) = try await onLoopThread {
            let connection = try connect(to: server)
            try run(connection, "CREATE TABLE t (id int PRIMARY KEY)")
            var closeReason: PostgresError?
            connection.onClose = { _, reason in closeReason = reason }
            let sleeping = connection.outcome("SELECT pg_sleep(60)")
            let transaction = connection.transactionOutcome([PostgresStatement("INSERT INTO t VALUES (1)")])
            let syncs = connection.pipelineSyncCount
            try spin(connection.loop) { connection.pipelineSyncCount > syncs }
            // Queued after the segment left: it waits for that segment's end and is never sent.
            let unsent = connection.outcome("SELECT 1")
            server.kill()
            try spin(connection.loop) { closeReason != nil }
            try connection.loop.run(.default, timeout: .milliseconds(20))
            return (sleeping.results.map(\.failure), transaction.results.map(\.failure), unsent.results.map(\.failure), closeReason)
        }
        #expect(sleeping.count == 1)
        #expect(transaction.count == 1)
        #expect(unsent.count == 1)
        if case .connectionLost? = sleeping.first ?? nil {} else { Issue.record("the query: \(sleeping)") }
        if case .commitOutcomeUnknown? = transaction.first ?? nil {} else { Issue.record("the transaction: \(transaction)") }
        if case .connectionLost? = unsent.first ?? nil {} else { Issue.record("the unsent query: \(unsent)") }
        if case .connectionLost? = closeReason {} else { Issue.record("close reason: \(String(describing: closeReason))") }
    }

    @Test func aRestartedServerTakesANewConnection() async throws {
        let server = try await PostgresServer.start()
        let value = try await onLoopThread {
            let first = try connect(to: server)
            try run(first, "CREATE TABLE kept (v text)")
            try run(first, "INSERT INTO kept VALUES ('survives')")
            // The fixture's commits are asynchronous (for speed): only a checkpoint makes them outlive a crash.
            try run(first, "CHECKPOINT")
            server.kill()
            try spin(first.loop) { first.state == .closed }
            try server.restart()
            return try run(try connect(to: server), "SELECT v FROM kept")[0, 0]
        }
        #expect(value == "survives")
    }

    @Test func noServerOnTheSocketIsAConnectionFailureWithLibpqsMessage() async throws {
        let directory = "/tmp/runloopkit-no-postgres-\(getpid())"
        let reason = try await onLoopThread {
            try closeReason(of: PostgresConnection(configuration: PostgresConfiguration(host: directory, user: "postgres", database: "postgres")))
        }
        guard case .connectionFailed(let message)? = reason else {
            Issue.record("expected a connection failure, got \(String(describing: reason))")
            return
        }
        #expect(message.contains("\(directory)/.s.PGSQL.5432"))
        #expect(message.contains("No such file or directory"))
    }

    @Test func aNameIsResolvedOffTheLoopAndLibpqGetsTheAddress() async throws {
        let (reason, askedOnLoop, answeredOffLoop) = try await onLoopThread {
            // A port nobody listens on: bind one, note it, close it.
            let listener = TCPListener()
            try listener.listen(host: "127.0.0.1", port: 0)
            let port = listener.port
            listener.close()
            let resolver = LoopbackResolver(loop: RunLoop.current)
            let connection = PostgresConnection(
                configuration: PostgresConfiguration(host: "db.example.test", port: port, user: "postgres", database: "postgres"),
                resolver: resolver)
            return (try closeReason(of: connection), resolver.askedOnLoopThread.get(), resolver.answeredOffLoopThread.get())
        }
        #expect(askedOnLoop)
        #expect(answeredOffLoop)
        guard case .connectionFailed(let message)? = reason else {
            Issue.record("expected a connection failure, got \(String(describing: reason))")
            return
        }
        #expect(message.contains("127.0.0.1"))
        #expect(message.contains("Connection refused"))
    }

    @Test func theConnectTimeoutEndsAConnectionThatNeverGetsAnAddress() async throws {
        let (reason, elapsed) = try await onManualClockLoop { loop, clock in
            let start = clock.now
            let connection = PostgresConnection(
                configuration: PostgresConfiguration(host: "db.example.test", user: "postgres", database: "postgres", connectTimeout: .seconds(5)),
                resolver: SilentResolver())
            var reason: PostgresError?
            connection.onClose = { _, why in reason = why }
            connection.connect()
            try loop.runUntil(timeout: .seconds(60)) { reason != nil }
            return (reason, clock.now - start)
        }
        #expect(reason == .timedOut(.connect))
        #expect(elapsed == .seconds(5))
    }

    @Test func theQueryTimeoutClosesAConnectionWhoseServerStaysSilent() async throws {
        let server = try await PostgresServer.start()
        let (error, reason, waited) = try await onManualClockLoop { loop, clock in
            // No connect deadline: on this clock an idle loop jumps to the next one while the server answers.
            let connection = try connect(to: server, connectTimeout: nil, queryTimeout: .seconds(5))
            var reason: PostgresError?
            connection.onClose = { _, why in reason = why }
            let sleeping = connection.outcome("SELECT pg_sleep(60)")
            let sent = clock.now
            try loop.runUntil(timeout: .seconds(60)) { reason != nil }
            return (sleeping.error, reason, clock.now - sent)
        }
        #expect(error == .timedOut(.query))
        #expect(reason == .timedOut(.query))
        #expect(waited >= .seconds(5) && waited < .seconds(6))
    }

    @Test func aLargeResultDoesNotBlockTheLoop() async throws {
        let server = try await PostgresServer.start()
        let (rows, last, ticksWhileArriving) = try await onLoopThread {
            let connection = try connect(to: server)
            var ticks = 0
            let ticker = RunLoopTimer(after: .milliseconds(1), repeating: .milliseconds(1), label: "ticker") { _ in ticks += 1 }
            connection.loop.add(ticker, forMode: .common)
            defer { ticker.invalidate() }
            let big = connection.outcome("SELECT n, repeat('x', 40) AS filler FROM generate_series(1, 100000) AS n")
            let ticksAtSend = ticks
            try spin(connection.loop, for: .seconds(120)) { big.isDone }
            return (big.value?.count, big.value?[99_999, 0], ticks - ticksAtSend)
        }
        #expect(rows == 100_000)
        #expect(last == "100000")
        // About 5 MB arrive over many reads; the timer runs between them.
        #expect(ticksWhileArriving >= 3)
    }
}

/// Connects `connection` and runs its loop until it closes (a connection meant to fail): why it closed.
private func closeReason(of connection: PostgresConnection) throws -> PostgresError? {
    var reason: PostgresError?
    connection.onClose = { _, why in reason = why }
    connection.connect()
    try spin(connection.loop) { reason != nil }
    return reason
}

/// Answers every name with 127.0.0.1, from another thread, and records the threads.
final class LoopbackResolver: HostResolver, @unchecked Sendable {
    let askedOnLoopThread = LockedBox(false)
    let answeredOffLoopThread = LockedBox(false)
    let loop: RunLoop
    init(loop: RunLoop) { self.loop = loop }

    func resolve(host: String, port: UInt16, completion: @escaping @Sendable (Result<[SocketAddress], NetError>) -> Void) {
        askedOnLoopThread.set(loop.isCurrentThread)
        let loop = self.loop
        let answered = answeredOffLoopThread
        startThread {
            answered.set(!loop.isCurrentThread)
            completion(.success([.ipv4Loopback(port: port)]))
        }
    }
}

/// Never answers: only the connect timeout ends the wait.
struct SilentResolver: HostResolver {
    func resolve(host: String, port: UInt16, completion: @escaping @Sendable (Result<[SocketAddress], NetError>) -> Void) {}
}
