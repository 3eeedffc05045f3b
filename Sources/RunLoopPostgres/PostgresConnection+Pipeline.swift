import CLibpq
import RunLoopKit

extension PostgresConnection {
    /// Sends what waits on the loop's next pass, so everything queued until then leaves in one segment.
    func scheduleSend() {
        guard machine.phase == .ready, !sendScheduled, !pipeline.isAwaitingResults else { return }
        sendScheduled = true
        do {
            try loop.performFromLoopThread(inModes: modes, label: "postgres send") { [weak self] in self?.sendSegment() }
        } catch {
            sendScheduled = false
        }
    }

    private func sendSegment() {
        sendScheduled = false
        guard machine.phase == .ready, let connection, let statements = pipeline.nextSegment() else { return }
        for statement in statements {
            let sent = withCStringArray(statement.parameters.map { $0 ?? "" }) { values in
                // A NULL parameter is a null pointer, not an empty string.
                var pointers = Array(UnsafeBufferPointer(start: values, count: statement.parameters.count))
                for (index, parameter) in statement.parameters.enumerated() where parameter == nil { pointers[index] = nil }
                return PQsendQueryParams(connection, statement.sql, Int32(pointers.count), nil, pointers, nil, nil, 0)
            }
            guard sent == 1 else { return perform(machine.close(.connectionLost(errorMessage()))) }
            statementCount += 1
        }
        guard PQpipelineSync(connection) == 1 else { return perform(machine.close(.connectionLost(errorMessage()))) }
        pipelineSyncCount += 1
        machine.awaitingResults(true, now: loop.now)
        dateTimer()
        flush()
    }

    /// Hands libpq's output to the socket; watches for writability while some is left.
    private func flush() {
        guard let connection else { return }
        switch PQflush(connection) {
        case 0:
            writeSource?.invalidate()
            writeSource = nil
        case 1:
            guard writeSource == nil else { return }
            do {
                let source = try RunLoopPortSource(fileDescriptor: PQsocket(connection), interest: .writable, label: "postgres output") {
                    [weak self] _, _ in self?.flush()
                }
                for mode in modes { try loop.add(source, forMode: mode) }
                writeSource = source
            } catch {
                perform(machine.close(.connectionLost("cannot watch the socket: \(error)")))
            }
        default:
            perform(machine.close(.connectionLost(errorMessage())))
        }
    }

    /// Input arrived: take it into libpq and hand every complete result to the pipeline.
    func readable() {
        guard let connection else { return }
        guard PQconsumeInput(connection) == 1 else { return perform(machine.close(.connectionLost(errorMessage()))) }
        var completed: [PostgresPipeline<PostgresRows>.Completion] = []
        var failure: PostgresError?
        // libpq answers NULL after each statement's result (not after a sync) and again when it has
        // nothing: two in a row end the loop, as does a statement whose result is still on the way.
        var nulls = 0
        while failure == nil, pipeline.isAwaitingResults, PQisBusy(connection) == 0, nulls < 2 {
            guard let result = PQgetResult(connection) else {
                nulls += 1
                continue
            }
            nulls = 0
            switch take(result, from: connection) {
            case .sync:
                guard let done = pipeline.syncReceived() else {
                    failure = .protocolMisuse("a pipeline sync came before the results it ends")
                    break
                }
                completed += done
            case .statement(let statementResult):
                guard let done = pipeline.received(statementResult) else {
                    failure = .protocolMisuse("a result no statement was waiting for")
                    break
                }
                completed += done
            case .failed(let error):
                failure = error
            }
        }
        if PQstatus(connection) == CONNECTION_BAD, failure == nil { failure = .connectionLost(errorMessage()) }
        deliver(completed)
        if let failure { return perform(machine.close(failure)) }
        machine.awaitingResults(pipeline.isAwaitingResults, now: loop.now)
        dateTimer()
        // Output libpq could not hand over while it waited for input.
        if writeSource != nil { flush() }
        scheduleSend()
    }

    private enum Taken {
        case sync
        case statement(PostgresPipeline<PostgresRows>.StatementResult)
        case failed(PostgresError)
    }

    /// What one of libpq's results means for the pipeline; takes ownership of `result`.
    private func take(_ result: OpaquePointer, from connection: OpaquePointer) -> Taken {
        let status = PQresultStatus(result)
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return .statement(.rows(PostgresRows(taking: result)))
        default:
            break
        }
        defer { PQclear(result) }
        switch status {
        case PGRES_PIPELINE_SYNC:
            return .sync
        case PGRES_PIPELINE_ABORTED:
            return .statement(.aborted)
        case PGRES_FATAL_ERROR:
            // libpq reports a broken connection as a result too; that is no statement's fault.
            if PQstatus(connection) == CONNECTION_BAD { return .failed(.connectionLost(errorMessage())) }
            return .statement(.failed(Self.serverError(in: result)))
        default:
            return .failed(.protocolMisuse("unsupported result \(String(cString: PQresStatus(status)))"))
        }
    }

    private static func serverError(in result: OpaquePointer) -> PostgresServerError {
        func field(_ code: Character) -> String? {
            PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
        }
        // The diagnostic field codes of libpq's PG_DIAG_* macros.
        return PostgresServerError(
            sqlState: field("C") ?? "XX000", message: field("M") ?? String(cString: PQresultErrorMessage(result)),
            detail: field("D"), constraint: field("n"))
    }

    /// Runs the completions in order, as one callback batch: a completion that closes the connection
    /// defers the failures it causes behind the rest of the batch, which keeps the order.
    func deliver(_ done: [PostgresPipeline<PostgresRows>.Completion]) {
        guard !done.isEmpty else { return }
        let batch = done.compactMap { completion in completions.removeValue(forKey: completion.id).map { ($0, completion.result) } }
        callbacks.run {
            for (callback, result) in batch { callback(result) }
        }
    }
}
