public import Logging
public import RunLoopKit
public import RunLoopNet

/// A TLS session on a ``TCPConnection``, driven by that connection's ``RunLoop``: bytes from the peer
/// are fed to OpenSSL through a memory BIO and the records it makes are written to the connection, so
/// nothing ever blocks — a handshake or a read that needs more bytes just waits for the loop's next
/// input. Decisions (handshake, close_notify either way, what a failure ends with) are
/// ``TLSSessionMachine``'s.
///
/// Client: create one with ``init(loop:modes:context:options:limits:logger:)``, set the callbacks,
/// call ``connect(to:port:serverName:timeout:)``. Server: wrap a connection a ``TCPListener`` accepted
/// with ``init(accepted:context:logger:)`` inside its `onAccept`. Either way ``onConnect`` runs once
/// the handshake is done, and a handshake that does not finish within
/// ``TLSConfiguration/handshakeTimeout`` (on the loop's clock) is dropped.
///
/// The shape is ``TCPConnection``'s, so an owner can sit on either: ``onData``, ``write(_:)``,
/// ``close(immediately:)``, ``pauseReading()``, ``onWritabilityChanged`` and ``onClose`` mean the same,
/// with ``TLSError`` for the failures. Timeouts, buffer limits and addresses are the TCP connection's
/// (``tcp``): its write limit bounds the encrypted output, its water marks are ``isWritable``.
///
/// Threads: confined to the loop's thread, like its TCP connection; every callback runs there, from a
/// loop callout, never inside a method you call. Lifetime: the loop keeps an open connection alive
/// (through its TCP connection), so an owner may hold it weakly; callbacks are dropped after
/// ``onClose``.
public final class TLSConnection {
    /// Where a session is in its life.
    public enum State: Sendable, Equatable {
        /// A client's TCP connection is being made.
        case connecting
        /// The TLS handshake is running.
        case handshaking
        /// Application data flows both ways.
        case open
        /// Ending: close_notify or an alert on its way, the TCP connection closing.
        case closing
        /// Closed; ``closeReason`` says why.
        case closed
    }

    /// The TCP connection underneath (addresses, timeouts, buffer limits).
    public let tcp: TCPConnection
    /// The context the session was made with; it stays in use for the session's whole life.
    public let context: TLSContext
    public var logger: Logger

    /// Runs once when the handshake is done (both sides).
    public var onConnect: ((TLSConnection) -> Void)?
    /// Receives application data as it is decrypted. Setting it delivers what is already decrypted on
    /// the loop's next pass.
    public var onData: ((TLSConnection, [UInt8]) -> Void)? {
        didSet { if onData != nil, machine.isOpen { scheduleRead() } }
    }
    /// Runs when ``isWritable`` changes, as ``TCPConnection/onWritabilityChanged``.
    public var onWritabilityChanged: ((TLSConnection, Bool) -> Void)?
    /// Runs exactly once when the session has closed, for whatever reason, with that reason.
    public var onClose: ((TLSConnection, TLSCloseReason) -> Void)?
    /// Sent as they are, unencrypted, instead of an alert when a peer turns out not to speak TLS
    /// (``TLSError/notTLS(_:)``): a plaintext client of the same protocol on the TLS port then reads
    /// why it is turned away, in its own protocol (an IM ERROR frame). `nil` (the default): nothing.
    /// Set it on a server session right after ``init(accepted:context:logger:)``: the peer's first
    /// bytes come on a later pass of the loop.
    public var answerToPlaintext: [UInt8]?

    private var machine: TLSSessionMachine
    private var engine: TLSEngine?
    /// What the owner wrote before the handshake was done, sent right after it.
    private var pendingWrites: [[UInt8]] = []
    private var pendingBytes = 0
    private var isReadingPaused = false
    private var readScheduled = false
    private var handshakeTimer: RunLoopTimer?
    private lazy var callbacks = CallbackDeferral(loop: tcp.loop, modes: tcp.modes, label: "tls callbacks")

    /// Creates a client session; call ``connect(to:port:serverName:timeout:)`` next. Must be called on
    /// the loop's thread.
    /// - Parameter context: made from a client configuration (``TLSConfiguration/client(trust:)``).
    public convenience init(
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        context: TLSContext,
        options: TCPOptions = TCPOptions(),
        limits: TCPBufferLimits = TCPBufferLimits(),
        logger: Logger = Logger(label: "RunLoopTLS")
    ) {
        guard case .client = context.configuration.role else { preconditionFailure("a TLS client needs a client context") }
        let tcp = TCPConnection(loop: loop, modes: modes, options: options, limits: limits, logger: logger)
        self.init(tcp: tcp, context: context, connecting: true, logger: logger)
    }

    /// The server side of a connection a ``TCPListener`` accepted: the handshake starts at once (and
    /// its timeout with it). Call it inside the listener's `onAccept`, on the loop's thread.
    /// - Parameter context: made from a server configuration; the listener's owner may swap its
    ///   context for later connections without touching this one.
    public convenience init(accepted tcp: TCPConnection, context: TLSContext, logger: Logger = Logger(label: "RunLoopTLS")) {
        guard case .server = context.configuration.role else { preconditionFailure("a TLS server needs a server context") }
        self.init(tcp: tcp, context: context, connecting: false, logger: logger)
        do {
            engine = try TLSEngine(context: context, serverName: nil)
            startHandshake()
        } catch {
            perform(machine.fail(error))
        }
    }

    private init(tcp: TCPConnection, context: TLSContext, connecting: Bool, logger: Logger) {
        precondition(tcp.loop.isCurrentThread, "TLSConnection must be created on its run loop's thread")
        self.tcp = tcp
        self.context = context
        self.logger = logger
        machine = TLSSessionMachine(connecting: connecting)
        tcp.onData = { [self] _, bytes in received(bytes) }
        tcp.onClose = { [self] _, reason in transportClosed(reason) }
        tcp.onWritabilityChanged = { [self] _, writable in onWritabilityChanged?(self, writable) }
    }

    /// The loop the session runs on.
    public var loop: RunLoop { tcp.loop }
    /// The modes of its sources and timers.
    public var modes: [RunLoop.Mode] { tcp.modes }
    public var state: State {
        switch machine.phase {
        case .connecting: return .connecting
        case .handshaking: return .handshaking
        case .open: return .open
        case .ending: return .closing
        case .closed: return .closed
        }
    }
    /// Why it closed; `nil` until it has.
    public var closeReason: TLSCloseReason? { machine.closeReason }
    /// The peer's address, once connecting or accepted.
    public var remoteAddress: SocketAddress? { tcp.remoteAddress }
    /// False while more than the TCP connection's high water mark of output waits.
    public var isWritable: Bool { tcp.isWritable }
    /// Encrypted output queued and not yet taken by the kernel, plus what waits for the handshake.
    public var bufferedOutputBytes: Int { tcp.bufferedOutputBytes + pendingBytes }
    /// Whether the peer's bytes wait in the TCP connection, not yet read into the session
    /// (``TCPConnection/hasUnreadInput``): a deadline that passes then was missed by a busy loop.
    public var hasUnreadInput: Bool { tcp.hasUnreadInput }
    /// The protocol ALPN settled on, once open (`nil` without ALPN).
    public var applicationProtocol: String? { machine.isOpen ? engine?.applicationProtocol : nil }
    /// The protocol version the handshake settled on, once open.
    public var version: TLSVersion? { machine.isOpen ? engine?.version : nil }

    // MARK: owner's calls

    /// Connects to `host` at `port` and runs the handshake. Outcome on the loop's thread: ``onConnect``,
    /// or ``onClose`` with the failure — ``TLSError/transport(_:)`` for TCP's, the others for TLS's.
    /// - Parameters:
    ///   - serverName: the name the certificate must carry, sent as SNI too (an IP literal is checked
    ///     against the certificate's addresses and not sent); `host` by default.
    ///   - timeout: TCP's connect timeout; the handshake has its own.
    public func connect(to host: String, port: UInt16, serverName: String? = nil, timeout: Duration? = .seconds(30)) {
        checkThread()
        precondition(machine.phase == .connecting && engine == nil, "connect on a TLS connection that is not new")
        do {
            engine = try TLSEngine(context: context, serverName: serverName ?? host)
        } catch {
            perform(machine.fail(error))
            return
        }
        tcp.onConnect = { [self] _ in
            if machine.transportConnected() == .startHandshake { startHandshake() }
        }
        tcp.connect(to: host, port: port, timeout: timeout)
    }

    /// Queues `bytes` to be encrypted and sent; before the handshake is done they wait for it. Never
    /// blocks, never calls back inside the call.
    /// - Throws: ``TLSError/transport(_:)`` with ``NetError/writeBufferFull(limit:)`` when the TCP
    ///   connection's write limit would be passed (nothing is queued), or ``NetError/outputClosed``
    ///   once closing or closed.
    public func write(_ bytes: [UInt8]) throws(TLSError) {
        checkThread()
        guard machine.acceptsWrites else { throw .transport(.outputClosed) }
        guard !bytes.isEmpty else { return }
        // Each record adds its header, tag and padding: 64 bytes bounds it for every suite offered.
        let records = bytes.count / (16 * 1024) + 1
        let limit = tcp.limits.writeLimit
        guard bufferedOutputBytes + bytes.count + records * 64 <= limit else { throw .transport(.writeBufferFull(limit: limit)) }
        guard machine.isOpen, let engine else {
            pendingWrites.append(bytes)
            pendingBytes += bytes.count
            return
        }
        do {
            try engine.write(bytes)
        } catch {
            return perform(machine.fail(error))
        }
        sendEngineOutput()
    }

    /// Queues the bytes of any sequence (a string's `utf8`). See ``write(_:)``.
    public func write<Bytes: Sequence>(_ bytes: Bytes) throws(TLSError) where Bytes.Element == UInt8 {
        try write(Array(bytes))
    }

    /// Closes the session. Once open and gracefully (the default): close_notify after everything
    /// written, then the TCP connection's graceful close (see ``TCPConnection/close(immediately:)``);
    /// ``onClose`` gets ``TLSCloseReason/closed``. Before the handshake is done, the connection is
    /// given up (``TLSCloseReason/closed``). Immediately: a TCP reset, ``TLSCloseReason/aborted``.
    /// Idempotent; ``onClose`` runs on a later pass of the loop.
    public func close(immediately: Bool = false) {
        checkThread()
        perform(machine.closeAsked(immediately: immediately))
    }

    /// Stops delivering application data (and reading from the socket) until ``resumeReading()``.
    public func pauseReading() {
        checkThread()
        isReadingPaused = true
        tcp.pauseReading()
    }

    /// Resumes after ``pauseReading()``; what was decrypted meanwhile comes on the loop's next pass.
    public func resumeReading() {
        checkThread()
        guard isReadingPaused else { return }
        isReadingPaused = false
        tcp.resumeReading()
        scheduleRead()
    }

    // MARK: the session on the loop

    private func checkThread() {
        precondition(tcp.loop.isCurrentThread, "TLSConnection used off its run loop's thread")
    }

    private func startHandshake() {
        if let timeout = context.configuration.handshakeTimeout {
            let timer = RunLoopTimer(after: timeout, label: "tls handshake") { [weak self] _ in
                guard let self else { return }
                self.logger.debug("TLS handshake with \(self.remoteAddress?.description ?? "?") timed out")
                self.perform(self.machine.handshakeTimedOut())
            }
            handshakeTimer = timer
            for mode in tcp.modes { tcp.loop.add(timer, forMode: mode) }
        }
        stepHandshake()
    }

    private func stepHandshake() {
        guard let engine else { return }
        let step = engine.handshake()
        // The next flight, or the alert of a failure, goes out either way.
        sendEngineOutput()
        perform(machine.handshake(step))
    }

    private func received(_ bytes: [UInt8]) {
        guard let engine else { return }
        engine.feed(bytes)
        if machine.phase == .handshaking { stepHandshake() }
        if machine.isOpen { readAvailable() }
    }

    private func scheduleRead() {
        guard !readScheduled else { return }
        readScheduled = true
        callbacks.runLater { [self] in
            readScheduled = false
            if machine.isOpen { readAvailable() }
        }
    }

    /// Decrypts and delivers what OpenSSL can, while the owner takes it.
    private func readAvailable() {
        guard let engine else { return }
        let outcome = engine.read(shouldContinue: { machine.isOpen && !isReadingPaused && onData != nil }) { bytes in
            onData?(self, bytes)
        }
        // A read can make records to send: a TLS 1.3 key update's answer, a refused renegotiation.
        sendEngineOutput()
        switch outcome {
        case .needsMoreInput, .paused: break
        case .closeNotify: perform(machine.closeNotifyReceived())
        case .failed(let error): perform(machine.fail(error))
        }
    }

    private func perform(_ action: TLSSessionMachine.Action) {
        switch action {
        case .nothing, .startHandshake:
            break
        case .established:
            handshakeTimer?.invalidate()
            handshakeTimer = nil
            sendPendingWrites()
            onConnect?(self)
            if machine.isOpen { readAvailable() }
        case .sendCloseNotifyThenClose:
            engine?.shutdown()
            sendEngineOutput()
            tcp.close()
        case .flushThenClose:
            if case .ending(.failed(let error)) = machine.phase {
                logger.debug("TLS with \(remoteAddress?.description ?? "?") failed: \(error)")
                if case .notTLS = error, let answerToPlaintext {
                    try? tcp.write(answerToPlaintext)
                    return tcp.close()
                }
            }
            sendEngineOutput()
            tcp.close()
        case .closeTransport:
            tcp.close()
        case .abortTransport:
            tcp.close(immediately: true)
        }
    }

    private func sendPendingWrites() {
        let writes = pendingWrites
        pendingWrites = []
        pendingBytes = 0
        for bytes in writes {
            do {
                try engine?.write(bytes)
            } catch {
                return perform(machine.fail(error))
            }
        }
        sendEngineOutput()
    }

    /// Hands OpenSSL's records to the TCP connection; one it refuses (its write limit) ends the session.
    private func sendEngineOutput() {
        guard let output = engine?.takeOutput(), !output.isEmpty else { return }
        do {
            try tcp.write(output)
        } catch {
            if machine.fail(.transport(error)) != .nothing { tcp.close(immediately: true) }
        }
    }

    private func transportClosed(_ reason: CloseReason) {
        guard let result = machine.transportClosed(reason) else { return }
        handshakeTimer?.invalidate()
        handshakeTimer = nil
        pendingWrites = []
        pendingBytes = 0
        let handler = onClose
        onClose = nil
        onConnect = nil
        onData = nil
        onWritabilityChanged = nil
        handler?(self, result)
    }
}

extension TLSConnection: CustomStringConvertible {
    public var description: String {
        "TLSConnection(\(tcp.remoteAddress?.description ?? "-"), \(state))"
    }
}

extension TLSConnection: ByteStream {}
