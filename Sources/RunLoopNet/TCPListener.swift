public import Logging
public import RunLoopKit

#if canImport(Glibc)
import Glibc
#endif

/// A listening TCP socket scheduled on a ``RunLoop`` as a port source, in the modes its owner chose
/// (``RunLoop/Mode/common`` by default). Each readiness accepts every pending connection (until the
/// kernel says there are no more) and hands each one, already open, to ``onAccept``.
///
/// - Connection limit: with ``maximumConnections`` set, a connection beyond the limit is accepted and
///   closed at once — after ``refusalMessage`` if one is set, so the client learns why — and
///   ``onRefused`` reports ``NetError/listenerFull(limit:)``. The limit is fitted to the process's
///   descriptor limit when listening starts (see ``connectionLimit``).
/// - Descriptor exhaustion (EMFILE, ENFILE): the listener keeps one descriptor in reserve. When an
///   accept fails for lack of descriptors, it gives the reserve up for a moment, accepts the waiting
///   client, refuses it like one over the limit (``onRefused`` reports
///   ``NetError/system(errno:operation:)`` with EMFILE or ENFILE), and takes the reserve back — so
///   clients are told, not left waiting in the backlog. If that fails too, and on memory pressure,
///   accepting pauses for ``acceptRetryDelay`` rather than the level-triggered listening socket
///   waking the loop in a busy loop. Either way one warning is logged, then at most one summary per
///   ``exhaustionLogInterval``.
/// - Logging: a refusal is logged (at `notice`) only when ``onRefused`` is not set — the owner who
///   is told decides what to log.
///
/// Lifetime: while listening the loop keeps the listener alive; ``close()`` stops it. Accepted
/// connections live on independently (``connections`` lists the open ones).
///
/// Threads: confined to its loop's thread, like ``TCPConnection``; callbacks run there.
public final class TCPListener {
    /// The loop it is scheduled on.
    public let loop: RunLoop
    /// The modes its source, its connections' sources and all their timers go in.
    public let modes: [RunLoop.Mode]
    /// Socket options for accepted connections.
    public var connectionOptions: TCPOptions {
        didSet { sharedSettings = nil }
    }
    /// Buffer limits for accepted connections.
    public var connectionLimits: TCPBufferLimits {
        didSet { sharedSettings = nil }
    }
    /// Where the listener logs (and its accepted connections).
    public var logger: Logger {
        didSet { sharedSettings = nil }
    }
    /// The settings the connections accepted since the last change above share.
    private var sharedSettings: TCPConnectionSettings?
    /// At most this many accepted connections open at once; `nil` (the default): no limit. While
    /// listening, the limit in force is ``connectionLimit``.
    public var maximumConnections: Int? {
        didSet { if isListening { fitLimitToDescriptors() } }
    }
    /// Sent (best effort, without blocking) to a client refused for the connection limit, before
    /// the connection is closed.
    public var refusalMessage: [UInt8]?
    /// How long accepting pauses after the process or system ran out of descriptors or memory.
    public var acceptRetryDelay: Duration = .milliseconds(100)
    /// After the warning about running out of descriptors or memory, further failures are counted and
    /// summarised in one line at most this often.
    public var exhaustionLogInterval: Duration = .seconds(10)

    /// Receives each accepted connection, open and on this loop. Set the connection's callbacks here:
    /// its input starts flowing once this returns. Connections arriving while it is `nil` are closed.
    public var onAccept: ((TCPListener, TCPConnection) -> Void)?
    /// Told about each connection refused because of ``maximumConnections``, with the client's address.
    public var onRefused: ((TCPListener, SocketAddress?, NetError) -> Void)?

    /// The bound address (with the port the system chose for port 0), while listening.
    public private(set) var localAddress: SocketAddress?
    /// Whether it is listening.
    public private(set) var isListening = false
    /// Accepted connections still open.
    public var connectionCount: Int { open.count }
    /// The accepted connections still open (in no particular order).
    public var connections: [TCPConnection] { open.all }
    /// Accept calls that failed for lack of descriptors or memory, since listening began.
    public internal(set) var acceptFailures = 0
    /// The connection limit in force: ``maximumConnections``, lowered if needed to what the descriptor
    /// limit (RLIMIT_NOFILE) left when listening started — the descriptors already open and a small
    /// reserve are subtracted; a warning says so when it lowers it. `nil` without ``maximumConnections``.
    public var connectionLimit: Int? {
        guard let maximumConnections else { return nil }
        return min(maximumConnections, descriptorBudget ?? .max)
    }

    var fd: Int32 = -1
    private var source: RunLoopPortSource?
    private var isWatching = false
    private var isChangingInterest = false
    var retryTimer: DeadlineTimer?
    /// A descriptor held in reserve, given up for a moment to refuse a client when descriptors run out.
    var spareDescriptor: Int32 = -1
    /// How many connections the descriptor limit leaves room for (measured when listening starts).
    var descriptorBudget: Int?
    /// Failures since the last exhaustion warning, and when it was logged.
    var unreportedExhaustion = 0
    var lastExhaustionWarning: LoopInstant?
    private var keepAlive: TCPListener?
    /// Listening with its source out of the loop (accepting paused), so listed to learn of the loop's
    /// end (``LoopTeardownWatch``).
    var isListedForTeardown = false
    private var open = PlacedArray<OpenPlace>()
    /// Test hook: the accept call (returns a descriptor or -errno, and the peer's address).
    var acceptCall: (Int32) -> (fd: Int32, address: SocketAddress?) = Socket.accept
    /// Test hook: the soft descriptor limit and the descriptors open now.
    var descriptorUsage: () -> (limit: Int, open: Int) = { (DescriptorLimit.current.soft, DescriptorLimit.openCount()) }

    /// A listener for `loop`, not listening yet. Must be called on the loop's thread.
    public init(
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        connectionOptions: TCPOptions = TCPOptions(),
        connectionLimits: TCPBufferLimits = TCPBufferLimits(),
        logger: Logger = Logger(label: "RunLoopNet")
    ) {
        precondition(loop.isCurrentThread, "TCPListener must be created on its run loop's thread")
        precondition(!modes.isEmpty, "TCPListener needs at least one mode")
        self.loop = loop
        self.modes = modes
        self.connectionOptions = connectionOptions
        self.connectionLimits = connectionLimits
        self.logger = logger
    }

    deinit {
        source?.invalidate()
        if fd >= 0 { Glibc.close(fd) }
        if spareDescriptor >= 0 { Glibc.close(spareDescriptor) }
    }

    /// The bound port (the chosen one after listening on port 0); 0 when not listening.
    public var port: UInt16 { localAddress?.port ?? 0 }

    /// Binds and listens on an IP literal (not a host name: binding must not wait for a resolver) and
    /// port; port 0 lets the system choose (read it back from ``port``). Loop thread only.
    /// - Throws: ``NetError/invalidAddress(_:)``, ``NetError/addressInUse``,
    ///   ``NetError/addressNotAvailable``, ``NetError/system(errno:operation:)``.
    public func listen(host: String = "127.0.0.1", port: UInt16 = 0, backlog: Int32 = 511, reuseAddress: Bool = true) throws(NetError) {
        guard let address = SocketAddress(ip: host, port: port) else { throw .invalidAddress(host) }
        try listen(on: address, backlog: backlog, reuseAddress: reuseAddress)
    }

    /// Binds and listens on `address`. See ``listen(host:port:backlog:reuseAddress:)``.
    /// - Parameters:
    ///   - backlog: completed connections the kernel queues before the loop accepts them (capped by
    ///     `net.core.somaxconn`).
    ///   - reuseAddress: SO_REUSEADDR, so a restarted daemon can bind while old connections linger in
    ///     TIME_WAIT.
    public func listen(on address: SocketAddress, backlog: Int32 = 511, reuseAddress: Bool = true) throws(NetError) {
        precondition(loop.isCurrentThread, "TCPListener used off its run loop's thread")
        precondition(!isListening, "TCPListener is already listening")
        let fd = try Socket.make(address.family)
        do throws(NetError) {
            if reuseAddress { try Socket.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR") }
            let bound = address.withSockAddr { Glibc.bind(fd, $0, $1) }
            guard bound == 0 else { throw NetError.from(errno: errno, operation: "bind") }
            guard Glibc.listen(fd, backlog) == 0 else { throw NetError.from(errno: errno, operation: "listen") }
            do {
                source = try RunLoopPortSource(
                    fileDescriptor: fd, interest: .readable, label: "tcp listener \(address)",
                    cancel: { [weak self] _, _ in self?.sourceCancelled() },
                    perform: { [unowned self] _, _ in self.acceptPending() })
            } catch {
                throw .system(errno: EBADF, operation: "watch listening socket (\(error))")
            }
        } catch {
            Glibc.close(fd)
            throw error
        }
        self.fd = fd
        localAddress = SocketAddress.of(fd, peer: false)
        isListening = true
        acceptFailures = 0
        unreportedExhaustion = 0
        lastExhaustionWarning = nil
        keepAlive = self
        reserveSpareDescriptor()
        measureDescriptorBudget()
        if !setWatching(true) {
            close()
            throw .system(errno: EBADF, operation: "watch listening socket")
        }
        logger.debug("listening on \(localAddress?.description ?? "?")")
    }

    /// Stops listening and closes the socket. Open connections are not touched (close them through
    /// ``connections`` for a full stop). Idempotent; loop thread only.
    public func close() {
        precondition(loop.isCurrentThread, "TCPListener used off its run loop's thread")
        guard isListening else { return }
        isListening = false
        isChangingInterest = true
        source?.invalidate()
        isChangingInterest = false
        source = nil
        isWatching = false
        LoopTeardownWatch.update(self, open: false, inLoop: false)
        retryTimer?.cancel()
        retryTimer = nil
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
        releaseSpareDescriptor()
        logger.debug("stopped listening on \(localAddress?.description ?? "?")")
        keepAlive = nil
    }

    // MARK: internals

    private func sourceCancelled() {
        guard !isChangingInterest else { return }
        stopAtLoopEnd()
    }

    /// The loop's thread ended, told by the source's cancel callout or, while accepting is paused,
    /// by ``LoopTeardownWatch``.
    func stopAtLoopEnd() {
        guard isListening else { return }
        logger.warning("listener on \(localAddress?.description ?? "?") stops: its run loop's thread ended")
        close()
    }

    private func setWatching(_ watching: Bool) -> Bool {
        guard let source, watching != isWatching else { return true }
        isChangingInterest = true
        defer { isChangingInterest = false }
        do {
            for mode in modes {
                if watching { try loop.add(source, forMode: mode) } else { loop.remove(source, forMode: mode) }
            }
            isWatching = watching
            LoopTeardownWatch.update(self, open: isListening, inLoop: watching)
            return true
        } catch {
            logger.error("listener on \(localAddress?.description ?? "?") cannot be watched: \(error)")
            return false
        }
    }

    /// Accepts until the kernel has no more pending connections.
    private func acceptPending() {
        while isListening {
            let (accepted, remote) = acceptCall(fd)
            if accepted < 0 {
                switch -accepted {
                case EAGAIN, EWOULDBLOCK:
                    return
                case EINTR, ECONNABORTED, EPROTO, EPERM, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET,
                    EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH:
                    // The client went away before we accepted it; the next one may be fine.
                    continue
                case EMFILE, ENFILE:
                    acceptFailures += 1
                    switch refuseWithSpareDescriptor(errno: -accepted) {
                    case .refused: continue
                    case .nonePending: return
                    case .failed: return pauseAccepting(errno: -accepted)
                    }
                case ENOBUFS, ENOMEM:
                    acceptFailures += 1
                    return pauseAccepting(errno: -accepted)
                default:
                    // Unexpected: pause rather than spin on a socket that keeps reporting it.
                    return pauseAccepting(errno: -accepted)
                }
            }
            noteAcceptRecovered()
            if let limit = connectionLimit, open.count >= limit {
                refuse(accepted, remote, because: .listenerFull(limit: limit))
                continue
            }
            guard let onAccept else {
                logger.warning("listener has no onAccept; connection from \(remote?.description ?? "?") closed")
                Glibc.close(accepted)
                continue
            }
            let connection = TCPConnection(accepted: accepted, remote: remote, listener: self, settings: connectionSettings)
            open.insert(connection)
            onAccept(self, connection)
            connection.startAccepted()
        }
    }

    /// What the next accepted connection starts with: the settings its predecessors share, unless one
    /// of them changed since.
    private var connectionSettings: TCPConnectionSettings {
        if let sharedSettings { return sharedSettings }
        let made = TCPConnectionSettings(options: connectionOptions, limits: connectionLimits, logger: logger)
        sharedSettings = made
        return made
    }

    /// Sends the refusal message (best effort, never blocking), closes, and reports the refusal once:
    /// to ``onRefused`` if set, otherwise to the log.
    func refuse(_ accepted: Int32, _ remote: SocketAddress?, because reason: NetError) {
        if let refusalMessage, !refusalMessage.isEmpty {
            _ = refusalMessage.withUnsafeBytes { Socket.send(accepted, $0) }
        }
        Socket.discardInput(accepted)
        Glibc.close(accepted)
        if let onRefused {
            onRefused(self, remote, reason)
        } else {
            logger.notice("refused connection from \(remote?.description ?? "?"): \(reason)")
        }
    }

    /// Out of descriptors or memory: the pending connection stays queued and the socket stays
    /// readable, so watching it now would spin. Stop watching and try again later.
    func pauseAccepting(errno code: Int32) {
        noteExhaustion(NetError.system(errno: code, operation: "accept"), outcome: "accepting paused for \(acceptRetryDelay)")
        guard setWatching(false) else { return }
        let timer =
            retryTimer
            ?? DeadlineTimer(loop: loop, modes: modes, label: "accept retry") { [weak self] in
                self?.resumeAccepting()
            }
        retryTimer = timer
        timer.arm(at: loop.now + acceptRetryDelay)
    }

    private func resumeAccepting() {
        guard isListening else { return }
        _ = setWatching(true)
    }

    /// A connection this listener accepted has closed.
    func connectionDidClose(_ connection: TCPConnection) {
        open.remove(connection)
    }

    /// Where an open connection keeps its index in ``open``.
    enum OpenPlace: PlaceKeeper {
        static func place(of connection: TCPConnection) -> UInt32 { connection.placeInListener }
        static func setPlace(_ place: UInt32, of connection: TCPConnection) { connection.placeInListener = place }
    }

    /// How many connections the table of open ones has room for (for the test that a crowd's
    /// room goes back once it closed).
    package var openTableRoom: Int { open.capacity }
}
