import RunLoopKit
import RunLoopNet
import RunLoopPostgres
import RunLoopTesting
import Testing

/// A connection against a real server of its own (``PostgresServer``), each test on its own loop.
@Suite struct PostgresConnectionTests {
    @Test func connectsOverTheUnixSocketAndReadsRows() async throws {
        let server = try await PostgresServer.start()
        let (columns, values, ready) = try await onLoopThread { () -> ([String], [String?], Bool) in
            let connection = try connect(to: server)
            let rows = try run(connection, "SELECT current_user AS who, 1 + 1 AS two, true AS yes, 2.5::float8 AS half")
            let values = [rows[0, "who"], rows.int(0, 1).map { "\($0)" }, rows.bool(0, 2).map { "\($0)" }, rows.double(0, 3).map { "\($0)" }]
            return (rows.columns, values, connection.state == .ready)
        }
        #expect(columns == ["who", "two", "yes", "half"])
        #expect(values == ["postgres", "2", "true", "2.5"])
        #expect(ready)
    }

    @Test func queriesQueuedBeforeTheConnectionIsUpLeaveTogetherOnceItIs() async throws {
        let server = try await PostgresServer.start()
        let (values, connects, syncs) = try await onLoopThread { () -> ([String?], Int, Int) in
            let connection = PostgresConnection(configuration: PostgresConfiguration(server: server))
            var connects = 0
            connection.onConnect = { _ in connects += 1 }
            let first = connection.outcome("SELECT 'first'")
            connection.connect()
            let second = connection.outcome("SELECT 'second'")
            try spin(connection.loop) { first.isDone && second.isDone }
            return ([first.value?[0, 0], second.value?[0, 0]], connects, connection.pipelineSyncCount)
        }
        #expect(values == ["first", "second"])
        #expect(connects == 1)
        #expect(syncs == 1)
    }

    @Test("statementCount counts each statement sent, a transaction's BEGIN and COMMIT among them")
    func statementsAreCounted() async throws {
        let server = try await PostgresServer.start()
        let (afterQueries, afterTransaction) = try await onLoopThread { () -> (Int, Int) in
            let connection = try connect(to: server)
            let before = connection.statementCount
            let first = connection.outcome("SELECT 1")
            let second = connection.outcome("SELECT 2")
            try spin(connection.loop) { first.isDone && second.isDone }
            let afterQueries = connection.statementCount - before
            var committed = false
            connection.transaction([PostgresStatement("SELECT 3")]) { _ in committed = true }
            try spin(connection.loop) { committed }
            return (afterQueries, connection.statementCount - before)
        }
        #expect(afterQueries == 2)
        #expect(afterTransaction == 5)
    }

    @Test func parametersNullsAndUnicodeRoundTrip() async throws {
        let server = try await PostgresServer.start()
        let text = "héllo, wörld — 日本語 🐘 'quoted' \"double\" \\ back"
        let values = try await onLoopThread {
            let connection = try connect(to: server)
            try run(connection, "CREATE TABLE notes (id int PRIMARY KEY, body text, extra text)")
            try run(connection, "INSERT INTO notes VALUES ($1, $2, $3)", ["7", text, nil])
            let rows = try run(connection, "SELECT body, extra, $1::text IS NULL AS null_parameter FROM notes WHERE id = $2", [nil, "7"])
            return [rows[0, 0], rows[0, 1], rows[0, 2]]
        }
        #expect(values == [text, nil, "t"])
    }

    @Test func aThousandQueriesQueuedInOnePassCompleteInOrderWithOneSync() async throws {
        let server = try await PostgresServer.start()
        let (order, syncs, completions) = try await onLoopThread {
            let connection = try connect(to: server)
            let before = connection.pipelineSyncCount
            var order: [Int] = []
            var completions = 0
            for number in 0..<1000 {
                connection.query("SELECT $1::int AS n", [String(number)]) { result in
                    completions += 1
                    if let n = try? result.get().int(0, 0) { order.append(n) }
                }
            }
            try spin(connection.loop) { completions >= 1000 }
            return (order, connection.pipelineSyncCount - before, completions)
        }
        #expect(completions == 1000)
        #expect(order == Array(0..<1000))
        #expect(syncs == 1)
    }

    @Test func aUniqueViolationFailsOnlyItsQueryAndThePipelineContinues() async throws {
        let server = try await PostgresServer.start()
        let (first, duplicate, second, count, syncs) = try await onLoopThread {
            let connection = try connect(to: server)
            try run(connection, "CREATE TABLE t (id int CONSTRAINT t_pkey PRIMARY KEY)")
            let before = connection.pipelineSyncCount
            let first = connection.outcome("INSERT INTO t VALUES (1)")
            let duplicate = connection.outcome("INSERT INTO t VALUES (1)")
            let second = connection.outcome("INSERT INTO t VALUES (2)")
            let count = connection.outcome("SELECT count(*) FROM t")
            try spin(connection.loop) { count.isDone }
            return (first.results.count, duplicate.error, second.results.count, count.value?.int(0, 0), connection.pipelineSyncCount - before)
        }
        #expect(first == 1)
        #expect(second == 1)
        guard case .server(let error)? = duplicate else {
            Issue.record("expected a server error, got \(String(describing: duplicate))")
            return
        }
        #expect(error.sqlState == PostgresServerError.uniqueViolation)
        #expect(error.constraint == "t_pkey")
        #expect(error.detail?.contains("already exists") == true)
        // Both inserts that were rolled back with the failed segment went out again: both rows are there.
        #expect(count == 2)
        // The segment that failed, and the one that carried the rest again.
        #expect(syncs == 2)
    }

    @Test func aTransactionCommitsAndARefusedOneRollsBackWithoutHarmingTheNext() async throws {
        let server = try await PostgresServer.start()
        let (committed, refused, rows, after) = try await onLoopThread {
            let connection = try connect(to: server)
            try run(connection, "CREATE TABLE t (id int PRIMARY KEY)")
            let committed = connection.transactionOutcome([
                PostgresStatement("INSERT INTO t VALUES ($1)", ["1"]), PostgresStatement("INSERT INTO t VALUES ($1) RETURNING id", ["2"])
            ])
            let refused = connection.transactionOutcome([
                PostgresStatement("INSERT INTO t VALUES (3)"), PostgresStatement("INSERT INTO t VALUES (1)")
            ])
            let after = connection.outcome("SELECT 'still usable'")
            try spin(connection.loop) { after.isDone }
            let rows = try run(connection, "SELECT id FROM t ORDER BY id")
            return (
                committed.value.map { $0.map(\.commandTag) + [$0[1][0, 0] ?? ""] }, refused.error,
                (0..<rows.count).map { rows[$0, 0] }, after.value?[0, 0]
            )
        }
        #expect(committed == ["INSERT 0 1", "INSERT 0 1", "2"])
        if case .server(let error)? = refused {
            #expect(error.sqlState == PostgresServerError.uniqueViolation)
        } else {
            Issue.record("expected a unique violation, got \(String(describing: refused))")
        }
        #expect(rows == ["1", "2"])
        #expect(after == "still usable")
    }

    @Test func transactionControlThroughQueryIsMisuseAndAClosedConnectionRefusesQueries() async throws {
        let (misuse, closed) = try await onLoopThread {
            let connection = PostgresConnection(configuration: PostgresConfiguration(host: "/nonexistent", user: "u", database: "d"))
            let misuse = connection.outcome("BEGIN")
            connection.close()
            let closed = connection.outcome("SELECT 1")
            // Neither completes inside the call that queued it.
            let early = misuse.isDone || closed.isDone
            try spin(connection.loop) { misuse.isDone && closed.isDone }
            return (early ? nil : misuse.error, closed.error)
        }
        if case .protocolMisuse? = misuse {} else { Issue.record("expected protocol misuse, got \(String(describing: misuse))") }
        #expect(closed == .closed)
    }
}
