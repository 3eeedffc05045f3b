import Testing

@testable import RunLoopPostgres

/// The pipeline's decisions without a server: rows are plain strings, results are fed by hand in the
/// order a server would answer.
@Suite struct PostgresPipelineTests {
    typealias Pipeline = PostgresPipeline<String>

    static let duplicate = PostgresServerError(sqlState: "23505", message: "duplicate key", constraint: "t_pkey")

    /// `[id: outcome]` in completion order, rows joined for easy comparison.
    static func outcomes(_ completions: [Pipeline.Completion]?) -> [String] {
        (completions ?? []).map { completion in
            switch completion.result {
            case .success(let rows): return "\(completion.id):\(rows.joined(separator: ","))"
            case .failure(let error): return "\(completion.id):\(error)"
            }
        }
    }

    @Test func everythingQueuedBeforeASendLeavesInOneSegmentAndCompletesInOrderAtTheSync() {
        var pipeline = Pipeline()
        for id in 1...3 { pipeline.enqueue(id: id, kind: .statement, statements: [PostgresStatement("SELECT \(id)")]) }
        #expect(pipeline.nextSegment()?.map(\.sql) == ["SELECT 1", "SELECT 2", "SELECT 3"])
        #expect(pipeline.nextSegment() == nil)
        for id in 1...3 { #expect(pipeline.received(.rows("r\(id)"))?.isEmpty == true) }
        #expect(Self.outcomes(pipeline.syncReceived()) == ["1:r1", "2:r2", "3:r3"])
        #expect(pipeline.isEmpty)
        #expect(!pipeline.isAwaitingResults)
    }

    @Test func requestsQueuedWhileASegmentIsOutWaitForItsSync() {
        var pipeline = Pipeline()
        pipeline.enqueue(id: 1, kind: .statement, statements: [PostgresStatement("SELECT 1")])
        _ = pipeline.nextSegment()
        pipeline.enqueue(id: 2, kind: .statement, statements: [PostgresStatement("SELECT 2")])
        #expect(pipeline.nextSegment() == nil)
        _ = pipeline.received(.rows("a"))
        #expect(Self.outcomes(pipeline.syncReceived()) == ["1:a"])
        #expect(pipeline.nextSegment()?.map(\.sql) == ["SELECT 2"])
    }

    @Test func aRefusedStatementFailsAloneAndItsSiblingsGoOutAgainInOrder() {
        var pipeline = Pipeline()
        for id in 1...3 { pipeline.enqueue(id: id, kind: .statement, statements: [PostgresStatement("INSERT \(id)")]) }
        _ = pipeline.nextSegment()
        #expect(pipeline.received(.rows("ok1"))?.isEmpty == true)
        #expect(pipeline.received(.failed(Self.duplicate))?.isEmpty == true)
        #expect(pipeline.received(.aborted)?.isEmpty == true)
        // The first one answered but was rolled back with the segment: it must not complete yet.
        #expect(Self.outcomes(pipeline.syncReceived()).isEmpty)
        #expect(pipeline.nextSegment()?.map(\.sql) == ["INSERT 1", "INSERT 3"])
        _ = pipeline.received(.rows("again1"))
        _ = pipeline.received(.rows("again3"))
        #expect(Self.outcomes(pipeline.syncReceived()) == ["1:again1", "2:server error: 23505 duplicate key", "3:again3"])
    }

    @Test func aTransactionIsBeginStatementsCommitAndCompletesAtItsCommit() {
        var pipeline = Pipeline()
        pipeline.enqueue(id: 1, kind: .statement, statements: [PostgresStatement("INSERT 0")])
        pipeline.enqueue(id: 2, kind: .transaction, statements: [PostgresStatement("INSERT 1"), PostgresStatement("INSERT 2")])
        pipeline.enqueue(id: 3, kind: .statement, statements: [PostgresStatement("SELECT 3")])
        #expect(pipeline.nextSegment()?.map(\.sql) == ["INSERT 0", "BEGIN", "INSERT 1", "INSERT 2", "COMMIT", "SELECT 3"])
        _ = pipeline.received(.rows("i0"))
        _ = pipeline.received(.rows("begin"))
        _ = pipeline.received(.rows("i1"))
        _ = pipeline.received(.rows("i2"))
        // The COMMIT also committed the statement before the BEGIN, which joined its transaction.
        #expect(Self.outcomes(pipeline.received(.rows("commit"))) == ["1:i0", "2:i1,i2"])
        _ = pipeline.received(.rows("s3"))
        #expect(Self.outcomes(pipeline.syncReceived()) == ["3:s3"])
    }

    @Test func aSegmentEndingWithACommittedTransactionEndsAtItsSyncWithNothingLeft() {
        var pipeline = Pipeline()
        pipeline.enqueue(id: 1, kind: .transaction, statements: [PostgresStatement("INSERT 1")])
        _ = pipeline.nextSegment()
        _ = pipeline.received(.rows("begin"))
        _ = pipeline.received(.rows("i1"))
        #expect(Self.outcomes(pipeline.received(.rows("commit"))) == ["1:i1"])
        // The queue is empty when the sync comes: before, this trapped on an index out of range.
        #expect(Self.outcomes(pipeline.syncReceived()) == [])
        #expect(!pipeline.isAwaitingResults && pipeline.isEmpty)
        #expect(pipeline.nextSegment() == nil)
    }

    @Test func aTransactionRefusedAfterItsBeginIsFollowedByRollbackBeforeAnythingElse() {
        var pipeline = Pipeline()
        pipeline.enqueue(id: 1, kind: .transaction, statements: [PostgresStatement("INSERT 1"), PostgresStatement("INSERT 2")])
        pipeline.enqueue(id: 2, kind: .statement, statements: [PostgresStatement("SELECT 2")])
        _ = pipeline.nextSegment()
        _ = pipeline.received(.rows("begin"))
        _ = pipeline.received(.rows("i1"))
        _ = pipeline.received(.failed(Self.duplicate))
        _ = pipeline.received(.aborted)  // COMMIT
        _ = pipeline.received(.aborted)  // SELECT 2
        #expect(Self.outcomes(pipeline.syncReceived()) == ["1:server error: 23505 duplicate key"])
        #expect(pipeline.nextSegment()?.map(\.sql) == ["ROLLBACK", "SELECT 2"])
        _ = pipeline.received(.rows("rollback"))
        _ = pipeline.received(.rows("s2"))
        #expect(Self.outcomes(pipeline.syncReceived()) == ["2:s2"])
    }

    @Test func aRefusedCommitNeedsNoRollback() {
        var pipeline = Pipeline()
        pipeline.enqueue(id: 1, kind: .transaction, statements: [PostgresStatement("INSERT 1")])
        _ = pipeline.nextSegment()
        _ = pipeline.received(.rows("begin"))
        _ = pipeline.received(.rows("i1"))
        _ = pipeline.received(.failed(PostgresServerError(sqlState: "40001", message: "could not serialize")))
        #expect(Self.outcomes(pipeline.syncReceived()) == ["1:server error: 40001 could not serialize"])
        #expect(pipeline.nextSegment() == nil)
    }

    @Test func aLostConnectionCompletesEveryRequestOnceAndAnInFlightCommitIsUnknown() {
        var pipeline = Pipeline()
        pipeline.enqueue(id: 1, kind: .statement, statements: [PostgresStatement("SELECT 1")])
        pipeline.enqueue(id: 2, kind: .transaction, statements: [PostgresStatement("INSERT 2")])
        _ = pipeline.nextSegment()
        pipeline.enqueue(id: 3, kind: .transaction, statements: [PostgresStatement("INSERT 3")])
        _ = pipeline.received(.rows("s1"))
        let lost = PostgresError.connectionLost("server closed the connection")
        #expect(
            Self.outcomes(pipeline.fail(lost)) == [
                "1:connection lost: server closed the connection",
                "2:commit outcome unknown: connection lost: server closed the connection",
                // Never sent: it cannot have committed.
                "3:connection lost: server closed the connection"
            ])
        #expect(pipeline.isEmpty)
        #expect(pipeline.fail(lost).isEmpty)
    }

    @Test func aTransactionSkippedByAFailedSegmentIsNotUnknownWhenTheConnectionThenEnds() {
        var pipeline = Pipeline()
        pipeline.enqueue(id: 1, kind: .statement, statements: [PostgresStatement("INSERT 1")])
        pipeline.enqueue(id: 2, kind: .transaction, statements: [PostgresStatement("INSERT 2")])
        _ = pipeline.nextSegment()
        _ = pipeline.received(.failed(Self.duplicate))
        _ = pipeline.received(.aborted)
        #expect(Self.outcomes(pipeline.fail(.closed)) == ["1:server error: 23505 duplicate key", "2:connection closed"])
    }

    @Test func resultsBeyondWhatWasSentAreReportedAsNil() {
        var pipeline = Pipeline()
        #expect(pipeline.received(.rows("stray")) == nil)
        #expect(pipeline.syncReceived() == nil)
        pipeline.enqueue(id: 1, kind: .statement, statements: [PostgresStatement("SELECT 1")])
        _ = pipeline.nextSegment()
        // A sync before the statement's result.
        #expect(pipeline.syncReceived() == nil)
    }

    @Test func transactionControlIsRecognisedWhateverItsCase() {
        #expect(PostgresStatement("  begin").controlsTransaction)
        #expect(PostgresStatement("Commit").controlsTransaction)
        #expect(PostgresStatement("SAVEPOINT a").controlsTransaction)
        #expect(!PostgresStatement("SELECT 'BEGIN'").controlsTransaction)
        #expect(!PostgresStatement("INSERT INTO t VALUES (1)").controlsTransaction)
    }
}
