public import Logging
public import RunLoopKit
public import RunLoopNet
public import RunLoopTLS

/// A WebSocket server: a ``TCPListener`` whose accepted connections go through the opening handshake
/// and are handed to ``onConnection`` open. Refused upgrades get an HTTP error answer and are closed;
/// nothing else is affected: 400, 405, 426 (with `Sec-WebSocket-Version: 13`) from the checks, 408 when
/// the head does not arrive within ``WebSocketConfiguration/handshakeTimeout``, 431 when it is over
/// ``WebSocketConfiguration/maximumHandshakeSize``, and 503 (``TCPListener/refusalMessage``) for a client
/// over the listener's connection limit.
///
/// With ``tlsContext`` set, every connection accepted speaks TLS first (HTTPS and `wss://`); the head
/// is read from the TLS session and everything above it is the same. A peer that sends plaintext
/// HTTP instead of a ClientHello is answered 400 in plain text and closed; a TLS handshake that
/// fails is logged at info.
///
/// Threads: loop thread only; every callback runs on the loop's thread.
public final class WebSocketServer {
    /// The listener underneath (its limits, connection count, address).
    public let listener: TCPListener
    /// Limits and timeouts given to every connection.
    public var configuration: WebSocketConfiguration
    public var logger: Logger

    /// Runs for every connection whose upgrade was accepted, already open: set its callbacks here.
    public var onConnection: ((WebSocketServer, WebSocketConnection) -> Void)?
    /// Asked for every valid upgrade request; return a refusal (e.g. 404 for an unknown target) to
    /// turn it away. `nil` (the default): every valid request is accepted.
    public var shouldAccept: ((WebSocketUpgradeRequest) -> WebSocketHandshakeRefusal?)?
    /// Runs for every refused upgrade, after the refusal is queued, e.g. to log it.
    public var onRefused: ((WebSocketServer, WebSocketHandshakeRefusal) -> Void)?
    /// Offered every request head first (its bytes up to the blank line), for a server that answers
    /// plain HTTP beside the upgrade — a page, a health check: return `true` when the request was
    /// answered on the connection (and it closed or will close), `false` to let the upgrade checks run.
    /// `nil` (the default): every request is taken for an upgrade.
    public var handleRequest: ((WebSocketServer, HTTPResponder, [UInt8]) -> Bool)?
    /// The TLS identity of connections accepted from now on (a server context: certificate, key,
    /// ALPN — `http/1.1` for a page); `nil` (the default): plaintext. Replacing it (a certificate
    /// reloaded) leaves open connections on the one they started with.
    public var tlsContext: TLSContext?

    private var handedOut: [ObjectIdentifier: WebSocketConnection] = [:]
    private var closedWaiters: [() -> Void] = []

    /// Must be called on the loop's thread.
    /// - Parameters:
    ///   - connectionLimits: each TCP connection's buffers; its water marks are the backpressure
    ///     ``WebSocketConnection/isWritable`` reports, and its write limit must exceed the largest
    ///     message sent.
    public init(
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        connectionOptions: TCPOptions = TCPOptions(),
        connectionLimits: TCPBufferLimits = TCPBufferLimits(),
        logger: Logger = Logger(label: "RunLoopWebSocket")
    ) {
        listener = TCPListener(
            loop: loop, modes: modes, connectionOptions: connectionOptions,
            connectionLimits: connectionLimits, logger: logger)
        self.configuration = configuration
        self.logger = logger
        // Weak: the loop may keep the listener (and its callout) a little longer than its owner keeps the server.
        listener.refusalMessage =
            WebSocketHandshakeRefusal(
                status: 503, reason: "too many connections; try again later", extraFields: ["Retry-After: 5"]
            ).response
        listener.onAccept = { [weak self] _, tcp in
            guard let self else { return tcp.close(immediately: true) }
            self.accepted(tcp)
        }
    }

    /// The port listened on (useful after listening on port 0).
    public var port: UInt16 { listener.port }

    /// Starts listening on `host`:`port` (127.0.0.1 and a free port by default).
    public func listen(host: String = "127.0.0.1", port: UInt16 = 0) throws(NetError) {
        try listener.listen(host: host, port: port)
    }

    /// Stops accepting; open connections carry on.
    public func close() { listener.close() }

    /// Connections handed to ``onConnection`` and not yet closed.
    public var connectionCount: Int { handedOut.count }

    /// Runs `done` (on the loop's thread, never inside this call) once every connection handed to
    /// ``onConnection`` has closed: its close handshake over, failed, or cut at its
    /// ``WebSocketConfiguration/closeTimeout``. A server that closed its connections calls this before
    /// its process ends: an exit while a handshake is under way resets the connection, and the peer
    /// sees 1006 (abnormal closure) instead of the code it was sent.
    public func whenConnectionsClosed(_ done: @escaping () -> Void) {
        closedWaiters.append(done)
        try? listener.loop.performFromLoopThread(inModes: listener.modes, label: "websocket.server closed") { [weak self] in
            self?.notifyIfAllClosed()
        }
    }

    private func connectionClosed(_ connection: WebSocketConnection) {
        handedOut[ObjectIdentifier(connection)] = nil
        notifyIfAllClosed()
    }

    private func notifyIfAllClosed() {
        guard handedOut.isEmpty, !closedWaiters.isEmpty else { return }
        let waiters = closedWaiters
        closedWaiters.removeAll()
        for done in waiters { done() }
    }

    private func accepted(_ tcp: TCPConnection) {
        let transport: WebSocketTransport
        if let tlsContext {
            let session = TLSConnection(accepted: tcp, context: tlsContext, logger: logger)
            session.answerToPlaintext = Self.plaintextRefusal.response
            transport = WebSocketTransport(session)
            transport.onClose = { [weak self] _, error in
                // Before the head: a handshake that failed (a plaintext client, a scanner, a stall).
                guard let self, let error else { return }
                self.logger.info("TLS with \(tcp.remoteAddress?.description ?? "?") failed before a request: \(error)")
            }
        } else {
            transport = WebSocketTransport(tcp)
        }
        let configuration = self.configuration
        transport.readHead(
            maximumLength: configuration.maximumHandshakeSize, timeout: configuration.handshakeTimeout,
            onOverflow: { [weak self] in
                // A client that is slow or sends a head too large still learns why it is turned away.
                self?.refuse(
                    transport,
                    WebSocketHandshakeRefusal(status: 431, reason: "request head over \(configuration.maximumHandshakeSize) bytes"))
            },
            onTimeout: { [weak self] in
                self?.refuse(
                    transport,
                    WebSocketHandshakeRefusal(
                        status: 408, reason: "the request head did not arrive within \(configuration.handshakeTimeout)"))
            }
        ) { [weak self] head in
            guard let self else { return transport.close(immediately: true) }
            self.handshake(transport, head: head, configuration: configuration)
        }
    }

    /// What a plaintext HTTP client on a TLS port reads (TLS would be gibberish to it).
    static let plaintextRefusal = WebSocketHandshakeRefusal(
        status: 400, reason: "this port speaks HTTPS only: use https:// (or wss://)")

    private func handshake(_ transport: WebSocketTransport, head: [UInt8], configuration: WebSocketConfiguration) {
        if let handleRequest, handleRequest(self, HTTPResponder(transport), head) { return }
        var outcome = WebSocketHandshake.validateRequest(head)
        if case .success(let request) = outcome, let refusal = shouldAccept?(request) { outcome = .failure(refusal) }
        switch outcome {
        case .failure(let refusal):
            refuse(transport, refusal)
        case .success(let request):
            do { try transport.write(WebSocketHandshake.acceptResponse(for: request)) } catch { return transport.close(immediately: true) }
            let connection = WebSocketConnection(
                role: .server, transport: transport, isTLS: tlsContext != nil, configuration: configuration, logger: logger)
            connection.upgradeRequest = request
            handedOut[ObjectIdentifier(connection)] = connection
            connection.onClosedForServer = { [weak self, unowned connection] in self?.connectionClosed(connection) }
            onConnection?(self, connection)
            connection.startReceiving()
        }
    }

    /// Answers `refusal` and closes gracefully (the answer is delivered before the end of the connection).
    private func refuse(_ transport: WebSocketTransport, _ refusal: WebSocketHandshakeRefusal) {
        logger.debug("refused upgrade from \(transport.tcp.remoteAddress?.description ?? "?"): \(refusal)")
        HTTPResponder(transport).respond(refusal.response)
        onRefused?(self, refusal)
    }
}
