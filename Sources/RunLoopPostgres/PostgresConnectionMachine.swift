import RunLoopKit

/// The connection's phases and deadlines, without libpq or a socket: what to do when the resolver
/// answers, when libpq's connect poll says what it waits for, when a deadline passes or the
/// connection breaks. Every input carries `now`; the owner arms one timer for ``nextDeadline``.
struct PostgresConnectionMachine {
    enum Phase: Equatable {
        case idle
        /// Waiting for the resolver (off the loop).
        case resolving
        /// libpq's connect poll runs; the socket is watched for what it asked.
        case connecting
        /// Connected, in pipeline mode.
        case ready
        case closed(PostgresError)
    }

    /// What libpq's `PQconnectPoll` answered.
    enum PollStatus: Equatable {
        case reading
        case writing
        case ok
        case failed(String)
    }

    enum Action: Equatable {
        /// Resolve the host name off the loop.
        case resolve
        /// `PQconnectStartParams` with the addresses (or the socket directory), then wait for the socket
        /// to be writable, as libpq asks before its first poll.
        case startConnecting
        /// Watch the (possibly new) socket for this readiness and poll again when it comes.
        case watch(PortEvents)
        /// Leave the connect phase: non-blocking, pipeline mode, send what waits.
        case becomeReady
        /// Tear down the socket and complete everything pending with this error.
        case close(PostgresError)
    }

    let connectTimeout: Duration?
    let queryTimeout: Duration?
    private(set) var phase = Phase.idle
    private var connectDeadline: LoopInstant?
    private var silenceDeadline: LoopInstant?

    init(connectTimeout: Duration?, queryTimeout: Duration?) {
        self.connectTimeout = connectTimeout
        self.queryTimeout = queryTimeout
    }

    /// The earliest deadline, if any is armed.
    var nextDeadline: LoopInstant? {
        switch (connectDeadline, silenceDeadline) {
        case (let a?, let b?): return min(a, b)
        case (let a, let b): return a ?? b
        }
    }

    var isClosed: Bool { if case .closed = phase { true } else { false } }

    mutating func start(needsResolving: Bool, now: LoopInstant) -> [Action] {
        guard phase == .idle else { return [] }
        connectDeadline = connectTimeout.map { now + $0 }
        if needsResolving {
            phase = .resolving
            return [.resolve]
        }
        phase = .connecting
        return [.startConnecting]
    }

    /// The resolver answered: `nil` when it found addresses, else its failure.
    mutating func resolved(failure: String?) -> [Action] {
        guard phase == .resolving else { return [] }
        if let failure { return close(.connectionFailed(failure)) }
        phase = .connecting
        return [.startConnecting]
    }

    /// libpq's connect poll answered (also `.failed` when `PQconnectStartParams` itself failed).
    mutating func polled(_ status: PollStatus) -> [Action] {
        guard phase == .connecting else { return [] }
        switch status {
        case .reading: return [.watch(.readable)]
        case .writing: return [.watch(.writable)]
        case .failed(let message): return close(.connectionFailed(message))
        case .ok:
            phase = .ready
            connectDeadline = nil
            return [.becomeReady]
        }
    }

    /// Whether results are awaited, and so whether the server's silence counts against the query
    /// timeout. Call after sending and after results arrive; bytes arriving restart the wait.
    mutating func awaitingResults(_ awaiting: Bool, now: LoopInstant) {
        guard phase == .ready else { return }
        silenceDeadline = awaiting ? queryTimeout.map { now + $0 } : nil
    }

    mutating func timerFired(now: LoopInstant) -> [Action] {
        if let connectDeadline, now >= connectDeadline { return close(.timedOut(.connect)) }
        if let silenceDeadline, now >= silenceDeadline { return close(.timedOut(.query)) }
        return []
    }

    /// The connection broke, or the owner closed it (`.closed`).
    mutating func close(_ reason: PostgresError) -> [Action] {
        if isClosed { return [] }
        phase = .closed(reason)
        connectDeadline = nil
        silenceDeadline = nil
        return [.close(reason)]
    }
}
