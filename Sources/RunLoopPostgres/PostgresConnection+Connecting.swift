import CLibpq
import Glibc
import Logging
import RunLoopKit
import RunLoopNet

extension PostgresConnection {
    /// Carries out what the machine decided, then dates the timer for its next deadline.
    func perform(_ actions: [PostgresConnectionMachine.Action]) {
        for action in actions {
            switch action {
            case .resolve: resolve()
            case .startConnecting: startConnecting(addresses: resolvedAddresses)
            case .watch(let events): watchSocket(events, perform: { $0.pollConnect() })
            case .becomeReady: becomeReady()
            case .close(let reason): tearDown(reason)
            }
        }
        dateTimer()
    }

    private func resolve() {
        let bound = LoopBound(self, loop: loop)
        let loop = self.loop
        let modes = self.modes
        resolver.resolve(host: configuration.host, port: configuration.port) { result in
            loop.perform(inModes: modes, label: "postgres resolved") { bound.value.resolved(result) }
        }
    }

    private func resolved(_ result: Result<[SocketAddress], NetError>) {
        switch result {
        case .success(let addresses):
            resolvedAddresses = addresses.map(\.ip)
            perform(machine.resolved(failure: nil))
        case .failure(let error):
            perform(machine.resolved(failure: "\(error)"))
        }
    }

    private func startConnecting(addresses: [String]) {
        let pairs = configuration.keywords(addresses: addresses)
        let started = withCStringArray(pairs.map(\.0)) { keywords in
            withCStringArray(pairs.map(\.1)) { values in PQconnectStartParams(keywords, values, 0) }
        }
        guard let started else { return perform(machine.polled(.failed("out of memory"))) }
        connection = started
        guard PQstatus(started) != CONNECTION_BAD else { return perform(machine.polled(.failed(errorMessage()))) }
        // libpq's rule: before the first poll, wait until the socket is writable.
        perform(machine.polled(.writing))
    }

    private func pollConnect() {
        guard let connection else { return }
        switch PQconnectPoll(connection) {
        case PGRES_POLLING_READING: perform(machine.polled(.reading))
        case PGRES_POLLING_WRITING: perform(machine.polled(.writing))
        case PGRES_POLLING_OK: perform(machine.polled(.ok))
        default: perform(machine.polled(.failed(errorMessage())))
        }
    }

    /// Watches libpq's current socket (it changes when libpq moves to the next address or retries
    /// without TLS) for `events`, replacing the source that watched the old one or other readiness.
    func watchSocket(_ events: PortEvents, perform: @escaping (PostgresConnection) -> Void) {
        guard let connection else { return }
        let socket = PQsocket(connection)
        // Always a new source: libpq may have closed the old socket and got the same number back.
        socketSource?.invalidate()
        socketSource = nil
        do {
            let source = try RunLoopPortSource(fileDescriptor: socket, interest: events, label: "postgres socket") { [weak self] _, _ in
                if let self { perform(self) }
            }
            for mode in modes { try loop.add(source, forMode: mode) }
            socketSource = source
        } catch {
            self.perform(machine.close(.connectionLost("cannot watch the socket: \(error)")))
        }
    }

    private func becomeReady() {
        guard let connection else { return }
        guard PQsetnonblocking(connection, 1) == 0, PQenterPipelineMode(connection) == 1 else {
            return perform(machine.close(.connectionLost(errorMessage())))
        }
        // Notices (a DROP … IF EXISTS that found nothing) go to the logger instead of stderr. Unretained:
        // libpq's connection is finished before this object goes.
        PQsetNoticeProcessor(
            connection,
            { context, message in
                guard let context, let message else { return }
                let owner = Unmanaged<PostgresConnection>.fromOpaque(context).takeUnretainedValue()
                owner.logger.debug("server notice: \(String(cString: message).trimmingSuffixNewline)")
            }, Unmanaged.passUnretained(self).toOpaque())
        watchSocket(.readable) { $0.readable() }
        logger.debug("connected to \(configuration.host)")
        callbacks.run { [weak self] in
            guard let self, self.state == .ready else { return }
            self.onConnect?(self)
        }
        scheduleSend()
    }

    /// The connection ended: sources, timer and libpq's connection go; everything pending completes,
    /// then `onClose` runs; the callbacks are dropped after it, which breaks cycles through them.
    private func tearDown(_ reason: PostgresError) {
        logger.debug("closed: \(reason)")
        socketSource?.invalidate()
        socketSource = nil
        writeSource?.invalidate()
        writeSource = nil
        deadlineTimer?.cancel()
        deadlineTimer = nil
        if let connection { PQfinish(connection) }
        connection = nil
        deliver(pipeline.fail(reason))
        callbacks.run { [self] in
            onClose?(self, reason)
            onConnect = nil
            onClose = nil
            keepAlive = nil
        }
    }

    /// Arms the deadline timer for the machine's next deadline, or disarms it.
    func dateTimer() {
        guard !machine.isClosed else { return }
        guard let deadline = machine.nextDeadline else {
            deadlineTimer?.disarm()
            return
        }
        if deadlineTimer == nil {
            deadlineTimer = DeadlineTimer(loop: loop, modes: modes, label: "postgres deadline") { [weak self] in
                guard let self else { return }
                self.perform(self.machine.timerFired(now: self.loop.now))
            }
        }
        deadlineTimer?.arm(at: deadline)
    }

    /// libpq's last error, trimmed of its trailing newline.
    func errorMessage() -> String {
        guard let connection, let message = PQerrorMessage(connection) else { return "unknown libpq error" }
        return String(cString: message).trimmingSuffixNewline
    }
}

extension String {
    /// libpq ends its messages with a newline.
    var trimmingSuffixNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}

/// Calls `body` with a NULL-terminated array of C strings that live for the call.
func withCStringArray<Result>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Result) -> Result {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
