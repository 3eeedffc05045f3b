public import Logging
public import RunLoopKit
public import RunLoopNet
public import RunLoopTLS

/// A WebSocket connection on a ``TCPConnection`` or a `TLSConnection` over one (`wss://`),
/// scheduled on that connection's ``RunLoop``: the
/// framing (``WebSocketFrameParser``), reassembly and UTF-8 checks (``WebSocketMessageAssembler``)
/// are pure values; this object carries them out on the loop.
///
/// Client: create one with ``init(loop:modes:configuration:options:limits:logger:)``, set the
/// callbacks, call ``connect(host:port:target:extraFields:timeout:)``; ``onOpen`` runs when the
/// server accepted the upgrade. Server: a ``WebSocketServer`` hands over connections already open.
///
/// Threads: confined to the loop's thread, like its TCP connection; every callback runs there, from a
/// loop callout, never inside a method you call (so ``send(_:)`` never re-enters ``onMessage``).
///
/// Lifetime: the loop keeps an open connection alive, so owners may hold it weakly. Callbacks are
/// dropped after ``onClose`` runs.
///
/// Failures: a peer that breaks the protocol gets a close frame with the matching code (1002, 1007,
/// 1009) and its connection ends; ``onClose`` says why. Nothing else on the loop is affected.
public final class WebSocketConnection {
    /// Which end of the connection this is: clients mask what they send, servers must not.
    public enum Role: Sendable, Equatable {
        case client
        case server
    }

    /// Where a connection is in its life.
    public enum State: Sendable, Equatable {
        /// Client: TCP connecting or the opening handshake in progress.
        case connecting
        /// Messages flow both ways.
        case open
        /// A close frame was sent or received; waiting for the handshake and TCP to finish.
        case closing
        /// Closed; ``closeInfo`` says how.
        case closed
    }

    public let role: Role
    /// The TCP connection underneath (addresses, buffer figures, timeouts), under TLS for `wss://`.
    public let tcp: TCPConnection
    /// Whether the connection runs over TLS.
    public let isTLS: Bool
    /// The stream the frames travel on: the TCP connection, or the TLS session over it.
    let transport: WebSocketTransport
    public let configuration: WebSocketConfiguration
    public var logger: Logger

    public internal(set) var state: State
    /// Server side: the upgrade request the client sent (its target and header fields).
    public internal(set) var upgradeRequest: WebSocketUpgradeRequest?
    /// How it closed; `nil` until it has.
    public internal(set) var closeInfo: WebSocketCloseInfo?

    /// Client: runs once when the server accepted the upgrade and messages may be sent.
    public var onOpen: ((WebSocketConnection) -> Void)?
    /// Runs for every complete message (fragments reassembled, text validated).
    public var onMessage: ((WebSocketConnection, WebSocketMessage) -> Void)?
    /// Runs for a ping, after its pong is already queued (pings are answered at once, whatever the
    /// owner does).
    public var onPing: ((WebSocketConnection, [UInt8]) -> Void)?
    /// Runs for a pong: the answer to ``ping(_:)`` — a heartbeat's proof that the peer is alive.
    public var onPong: ((WebSocketConnection, [UInt8]) -> Void)?
    /// Runs when ``isWritable`` changes (the TCP connection's water marks): stop producing at `false`,
    /// resume at `true`.
    public var onWritabilityChanged: ((WebSocketConnection, Bool) -> Void)?
    /// Runs at most once, when the connection stops being open because of the peer — its close frame
    /// arrived, or it broke the protocol — before the close handshake and the TCP connection are over.
    /// From then on nothing can be sent (``send(_:)`` throws ``WebSocketError/notOpen``) and nothing
    /// more is received, but ``onClose`` may come only ``WebSocketConfiguration/closeTimeout`` later:
    /// a peer that keeps its end of TCP open after the close frames puts it off until then. So an
    /// owner whose state stands for the peer (an IM session, a user shown online) ends it here.
    /// Not after this side's own ``close(code:reason:)`` or ``abort()``; ``onClose`` follows in every case.
    public var onClosing: ((WebSocketConnection, WebSocketClosingCause) -> Void)?
    /// Runs exactly once when the connection has closed, for whatever reason.
    public var onClose: ((WebSocketConnection, WebSocketCloseInfo) -> Void)?

    var parser: WebSocketFrameParser
    var assembler: WebSocketMessageAssembler
    var closeSent: (code: WebSocketCloseCode?, reason: String)?
    var closeReceived: (code: WebSocketCloseCode?, reason: String)?
    /// Whether the peer's close frame came before ours.
    var peerStartedClose = false
    var failure: WebSocketError?
    var closeTimer: RunLoopTimer?
    /// The server that handed this connection out, told when it closed (after ``onClose``).
    var onClosedForServer: (() -> Void)?
    var handshakeKey: String?
    /// A client's connect, for ``connect(host:port:target:extraFields:timeout:)``.
    var startConnecting: ((_ host: String, _ port: UInt16, _ timeout: Duration) -> Void)?

    /// Creates a client connection; call ``connect(host:port:target:extraFields:timeout:)`` next.
    /// Must be called on the loop's thread.
    /// - Parameter tls: a client context (`TLSConfiguration.client(trust:)`) for `wss://`: the server's
    ///   certificate is verified against it and the host name given to `connect`; `nil` (the
    ///   default): plaintext `ws://`.
    public convenience init(
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        options: TCPOptions = TCPOptions(),
        limits: TCPBufferLimits = TCPBufferLimits(),
        tls: TLSContext? = nil,
        logger: Logger = Logger(label: "RunLoopWebSocket")
    ) {
        if let tls {
            let session = TLSConnection(loop: loop, modes: modes, context: tls, options: options, limits: limits, logger: logger)
            self.init(role: .client, transport: WebSocketTransport(session), isTLS: true, configuration: configuration, logger: logger)
            startConnecting = { session.connect(to: $0, port: $1, timeout: $2) }
        } else {
            let tcp = TCPConnection(loop: loop, modes: modes, options: options, limits: limits, logger: logger)
            self.init(role: .client, transport: WebSocketTransport(tcp), isTLS: false, configuration: configuration, logger: logger)
            startConnecting = { tcp.connect(to: $0, port: $1, timeout: $2) }
        }
    }

    init(role: Role, transport: WebSocketTransport, isTLS: Bool, configuration: WebSocketConfiguration, logger: Logger) {
        self.role = role
        self.transport = transport
        self.isTLS = isTLS
        tcp = transport.tcp
        self.configuration = configuration
        self.logger = logger
        state = role == .client ? .connecting : .open
        // A server parses client frames and the other way round.
        parser = WebSocketFrameParser(sender: role == .server ? .client : .server, maximumFrameSize: configuration.maximumFrameSize)
        assembler = WebSocketMessageAssembler(maximumMessageSize: configuration.maximumMessageSize)
        transport.onClose = { [self] reason, error in transportClosed(reason, error: error) }
        transport.onWritabilityChanged = { [self] writable in onWritabilityChanged?(self, writable) }
    }

    /// Starts taking frames (the handshake is done).
    func startReceiving() {
        transport.onData = { [self] bytes in receive(bytes) }
    }

    /// The loop the connection runs on.
    public var loop: RunLoop { tcp.loop }
    /// False while more than the TCP connection's high water mark of output waits.
    public var isWritable: Bool { transport.isWritable }
    /// Output bytes queued and not yet taken by the kernel (encrypted, under TLS).
    public var bufferedOutputBytes: Int { transport.bufferedOutputBytes }
    /// Whether the peer's bytes wait in the socket, not yet read.
    public var hasUnreadInput: Bool { transport.hasUnreadInput }

    /// Stops reading frames (the peer is slowed down by TCP flow control) until ``resumeReading()``.
    public func pauseReading() { transport.pauseReading() }
    /// Resumes reading after ``pauseReading()``.
    public func resumeReading() { transport.resumeReading() }

    // MARK: sending

    /// Sends a message as one frame.
    /// - Throws: ``WebSocketError/notOpen`` unless open (also once a close frame was sent), or
    ///   ``WebSocketError/transport(_:)`` when the TCP connection refuses the bytes (its write limit).
    public func send(_ message: WebSocketMessage) throws(WebSocketError) {
        switch message {
        case .text(let text): try send(WebSocketFrame(opcode: .text, payload: Array(text.utf8)))
        case .binary(let bytes): try send(WebSocketFrame(opcode: .binary, payload: bytes))
        }
    }

    /// Sends a text message.
    public func send(text: String) throws(WebSocketError) { try send(.text(text)) }
    /// Sends a binary message.
    public func send(binary: [UInt8]) throws(WebSocketError) { try send(.binary(binary)) }

    /// Sends a ping; the peer answers with a pong carrying `payload` (``onPong``).
    /// - Throws: ``WebSocketError/controlPayloadTooLarge(_:)`` over 125 bytes, or as ``send(_:)``.
    public func ping(_ payload: [UInt8] = []) throws(WebSocketError) {
        guard payload.count <= 125 else { throw .controlPayloadTooLarge(payload.count) }
        try send(WebSocketFrame(opcode: .ping, payload: payload))
    }

    /// Sends an unsolicited pong: a one-way heartbeat the peer does not answer.
    public func pong(_ payload: [UInt8] = []) throws(WebSocketError) {
        guard payload.count <= 125 else { throw .controlPayloadTooLarge(payload.count) }
        try send(WebSocketFrame(opcode: .pong, payload: payload))
    }

    /// Sends a frame as it is, for an owner that fragments messages itself; the continuation rules
    /// are the owner's to keep.
    public func send(_ frame: WebSocketFrame) throws(WebSocketError) {
        precondition(tcp.loop.isCurrentThread, "WebSocketConnection used off its run loop's thread")
        guard state == .open, closeSent == nil else { throw .notOpen }
        try write(frame)
    }

    func write(_ frame: WebSocketFrame) throws(WebSocketError) {
        try transport.write(frame.encoded(maskingWord: role == .client ? WebSocketMask.randomWord() : nil))
    }
}

extension WebSocketConnection: CustomStringConvertible {
    public var description: String {
        "WebSocketConnection(\(role), \(tcp.remoteAddress?.description ?? "-"), \(state))"
    }
}
