/// The pipeline's decisions, without libpq: what goes out in the next segment (the statements up to
/// one sync), which statement the next result belongs to, when results are final, and what each
/// request completes with when something fails. Generic over the rows so tests drive it with plain
/// values.
///
/// Why results wait: the statements between two syncs run in one implicit transaction on the server,
/// so a later statement's error rolls back an earlier one that already answered "OK". A result is
/// therefore final only at a commit point: the segment's sync when the segment did not fail, or a
/// transaction's successful COMMIT (which also commits the statements before it in the segment,
/// since its BEGIN turned the implicit transaction into its own). When a statement fails, it alone
/// fails; the others of its segment were rolled back or skipped (`PGRES_PIPELINE_ABORTED`) and go
/// out again in the next segment, in their order. A transaction that failed after its BEGIN leaves
/// the server's transaction block aborted past the sync, so the next segment starts with ROLLBACK.
///
/// One segment is in flight at a time: requests queued meanwhile wait and leave together when it
/// ends, so a retried request never runs after one queued later. Completions come in queue order.
struct PostgresPipeline<Rows> {
    enum Kind: Equatable {
        /// One statement; its rows.
        case statement
        /// BEGIN, the statements, COMMIT; the rows of the statements between.
        case transaction
        /// The pipeline's own ROLLBACK after a failed transaction; completes nobody.
        case rollback
    }

    /// What one statement answered.
    enum StatementResult {
        case rows(Rows)
        case failed(PostgresServerError)
        /// Skipped by the server because an earlier statement of the segment failed.
        case aborted
    }

    struct Completion {
        let id: Int
        let result: Result<[Rows], PostgresError>
    }

    private struct Request {
        let id: Int
        let kind: Kind
        /// As sent: a transaction's BEGIN and COMMIT included.
        let statements: [PostgresStatement]
        var results: [Rows] = []
        var isInSegment = false
        var outcome: Result<[Rows], PostgresError>?
    }

    /// Waiting, in flight or final but not yet completed, in queue order. The segment in flight
    /// is among the first requests (those with `isInSegment`).
    private var requests: [Request] = []
    private var segmentInFlight = false
    private var segmentFailed = false
    private var needsRollback = false
    /// The request and statement the next result belongs to.
    private var cursorRequest = 0
    private var cursorStatement = 0

    /// Whether a segment is out and its sync has not come back.
    var isAwaitingResults: Bool { segmentInFlight }

    /// Whether nothing waits, is in flight or waits to complete.
    var isEmpty: Bool { requests.isEmpty }

    /// Queues a statement or a transaction's statements (without BEGIN and COMMIT, which it adds).
    mutating func enqueue(id: Int, kind: Kind, statements: [PostgresStatement]) {
        let sent = kind == .transaction ? [PostgresStatement.begin] + statements + [PostgresStatement.commit] : statements
        requests.append(Request(id: id, kind: kind, statements: sent))
    }

    /// The statements to send before one sync, or `nil` while a segment is in flight or nothing waits.
    mutating func nextSegment() -> [PostgresStatement]? {
        guard !segmentInFlight else { return nil }
        var statements: [PostgresStatement] = []
        for index in requests.indices where requests[index].outcome == nil {
            requests[index].isInSegment = true
            statements += requests[index].statements
        }
        guard !statements.isEmpty else { return nil }
        segmentInFlight = true
        segmentFailed = false
        cursorRequest = requests.firstIndex(where: \.isInSegment) ?? 0
        cursorStatement = 0
        return statements
    }

    /// The next statement's result. Returns the requests that completed, or `nil` when no statement
    /// awaits a result (the server answered more than was sent).
    mutating func received(_ result: StatementResult) -> [Completion]? {
        guard segmentInFlight, cursorRequest < requests.count, requests[cursorRequest].isInSegment else { return nil }
        let index = cursorRequest
        let statement = cursorStatement
        advanceCursor()
        let kind = requests[index].kind
        let last = requests[index].statements.count - 1
        switch result {
        case .aborted:
            return []
        case .failed(let error):
            segmentFailed = true
            requests[index].outcome = .failure(.server(error))
            // Past BEGIN and before COMMIT: the server's block stays aborted until a ROLLBACK.
            if kind == .transaction, statement > 0, statement < last { needsRollback = true }
            return []
        case .rows(let rows):
            let isUserStatement = kind == .statement || (kind == .transaction && statement > 0 && statement < last)
            if isUserStatement { requests[index].results.append(rows) }
            guard kind == .transaction, statement == last, !segmentFailed else { return [] }
            commitSegment(through: index)
            return completeHead()
        }
    }

    /// The segment's sync came back: its surviving results are final, the rest go out again. `nil`
    /// when no segment awaited its sync or statements of it still await results.
    mutating func syncReceived() -> [Completion]? {
        guard segmentInFlight, cursorRequest >= requests.count || !requests[cursorRequest].isInSegment else { return nil }
        segmentInFlight = false
        if segmentFailed {
            for index in requests.indices where requests[index].isInSegment {
                requests[index].isInSegment = false
                if requests[index].outcome == nil { requests[index].results = [] }
            }
        } else {
            commitSegment(through: requests.count - 1)
        }
        let completed = completeHead()
        if needsRollback {
            needsRollback = false
            requests.insert(Request(id: -1, kind: .rollback, statements: [.rollback]), at: 0)
        }
        return completed
    }

    /// The connection ended: every request completes now, in order. `reason` is what a request that
    /// did not run (or whose outcome does not matter) gets; a transaction whose COMMIT went out in a
    /// segment that had not failed gets ``PostgresError/commitOutcomeUnknown(_:)``.
    mutating func fail(_ reason: PostgresError) -> [Completion] {
        for index in requests.indices {
            let request = requests[index]
            if request.outcome == nil {
                let commitWasSent = request.kind == .transaction && request.isInSegment && segmentInFlight && !segmentFailed
                requests[index].outcome = .failure(commitWasSent ? .commitOutcomeUnknown(reason.description) : reason)
            }
            requests[index].isInSegment = false
        }
        segmentInFlight = false
        needsRollback = false
        return completeHead()
    }

    private mutating func advanceCursor() {
        cursorStatement += 1
        guard cursorStatement >= requests[cursorRequest].statements.count else { return }
        cursorStatement = 0
        cursorRequest += 1
        while cursorRequest < requests.count, !requests[cursorRequest].isInSegment { cursorRequest += 1 }
    }

    /// Everything of the segment up to `last` committed: its results are final.
    private mutating func commitSegment(through last: Int) {
        // `last` is -1 when a COMMIT already completed everything and the sync finds the queue empty.
        for index in requests.indices where index <= last && requests[index].isInSegment {
            requests[index].isInSegment = false
            if requests[index].outcome == nil { requests[index].outcome = .success(requests[index].results) }
        }
    }

    /// Removes the final requests at the head of the queue and returns their completions.
    private mutating func completeHead() -> [Completion] {
        let done = requests.prefix(while: { $0.outcome != nil && !$0.isInSegment })
        guard !done.isEmpty else { return [] }
        requests.removeFirst(done.count)
        cursorRequest = max(0, cursorRequest - done.count)
        return done.compactMap { request in
            guard request.kind != .rollback, let outcome = request.outcome else { return nil }
            return Completion(id: request.id, result: outcome)
        }
    }
}
