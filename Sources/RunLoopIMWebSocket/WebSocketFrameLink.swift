public import RunLoopIM
public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet
public import RunLoopTLS
public import RunLoopWebSocket

/// An ``IMFrameLink`` on a ``WebSocketConnection``, either side: an ``IMClient`` connects through it
/// (``connector(host:port:target:connectTimeout:configuration:)``), and an ``IMServer`` runs a session
/// over an accepted one (``IMServer/adopt(_:pingInterval:)``), with the same logic as for TCP. The IM
/// heartbeat and ping-pong run above it unchanged (they are IM frames).
///
/// Encodings: a binary message carries exactly one IM frame, bytes as on TCP; a text message carries
/// one ``IMJSONEnvelope``. A client's link speaks binary only: a text message from the server closes
/// it with 1003 (unsupported data). On the server, the client's first message fixes the connection's
/// encoding and every answer uses it; a message in the other encoding afterwards is a protocol error
/// (ERROR `badRequest`). Before the first message (a login timeout) the server speaks binary.
///
/// Liveness (server side): besides the IM keepalive rule (the client's HEARTBEATs), the link sends a WebSocket ping
/// every ``pingInterval`` — browsers answer pings by themselves though their scripts cannot send any —
/// and drops a connection whose previous ping is still unanswered at the next one — unless the peer's
/// bytes wait unread then (this loop was late, not the peer silent), which puts the verdict off by
/// one more interval.
///
/// Sizes: a frame body over `maximumBodyLength` (the server's frame limit) is `frameTooLarge` — ERROR,
/// then close 1009 — in either encoding (for JSON, measured as the binary body it re-encodes to),
/// except a SEND whose bytes are all in the message: WebSocket has already bounded and read the whole
/// message (``WebSocketConfiguration/maximumMessageSize``, 1 MiB by default), so it goes up to the session
/// as a frame, and the server answers SEND_ACK `frameTooLarge` with the message's id and keeps the
/// session — one refused paste, not a dropped connection. The server, not the link, holds SENDs to
/// their limit.
///
/// Closing: the session's end reason becomes the close code (``closeCode(for:)``), after the ERROR
/// frame the session sent. A server's link reports the connection closed as soon as the peer's close
/// frame (or a WebSocket violation) arrives — ``WebSocketConnection/onClosing`` — not when the close
/// handshake and TCP are over, which a peer that keeps TCP open can put off until the close timeout:
/// nothing can be sent any more, so the session ends there, whatever state its login is in. A
/// client's link reports when the connection is closed. A WebSocket violation is reported as
/// ``IMLinkFailure/protocolViolation(code:reason:)`` with its close code.
/// Loop thread only.
public final class WebSocketFrameLink: IMFrameLink {
    /// How the client writes its frames.
    public enum Encoding: Sendable, Equatable {
        /// Binary messages, one IM frame each (16-byte header + protobuf body).
        case binary
        /// Text messages, one JSON envelope each.
        case json
    }

    /// The WebSocket connection (its TCP connection has the addresses and buffer figures).
    public let connection: WebSocketConnection
    /// The client's encoding, once its first message arrived.
    public private(set) var encoding: Encoding?
    /// Time between the server's WebSocket pings; `nil`: none (a client's link).
    public let pingInterval: Duration?
    private var maximumBodyLength: Int
    /// Where a client's link connects when opened; `nil` for a server's, open from the start.
    private let endpoint: (host: String, port: UInt16, target: String, timeout: Duration)?
    private var isReporting = true
    private var pingTimer: RunLoopTimer?
    private var awaitingPong = false
    /// Late, not silent: a pong missing at the next ping while the peer's bytes wait unread is judged
    /// one ping later, once per ping (its grace is the ping interval, set when pinging starts).
    private var pongSilence = SilenceDeadline(renewal: .perWait)

    /// - Parameters:
    ///   - maximumBodyLength: the largest IM frame body accepted, binary or re-encoded from JSON, but for
    ///     SEND (see "Sizes"); the JSON text itself is also bounded by the connection's message limit.
    ///   - pingInterval: how often to ping; `nil` for never.
    public init(connection: WebSocketConnection, maximumBodyLength: Int, pingInterval: Duration? = .seconds(20)) {
        self.connection = connection
        self.maximumBodyLength = maximumBodyLength
        self.pingInterval = pingInterval
        endpoint = nil
    }

    /// A client's link: connects to `host`:`port` and upgrades at `target` when opened, then speaks
    /// binary frames.
    /// - Parameters:
    ///   - target: the upgrade's request target (the chat node serves `/ws`).
    ///   - tls: a client context for `wss://` (the server verified against it and `host`); `nil`: `ws://`.
    public init(
        host: String, port: UInt16, target: String = "/ws", connectTimeout: Duration = .seconds(10),
        maximumFrameBody: Int = 64 * 1024, loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common],
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        options: TCPOptions = TCPOptions(), limits: TCPBufferLimits = TCPBufferLimits(), tls: TLSContext? = nil
    ) {
        connection = WebSocketConnection(
            loop: loop, modes: modes, configuration: configuration, options: options, limits: limits, tls: tls)
        maximumBodyLength = maximumFrameBody
        pingInterval = nil
        encoding = .binary
        endpoint = (host, port, target, connectTimeout)
    }

    /// A connector for ``IMClient``: a new WebSocket link to `host`:`port` `target` per attempt,
    /// over TLS with `tls` (`wss://`) when given.
    public static func connector(
        host: String, port: UInt16, target: String = "/ws", connectTimeout: Duration = .seconds(10),
        configuration: WebSocketConfiguration = WebSocketConfiguration(), tls: TLSContext? = nil
    ) -> IMConnector {
        { loop, modes, maximumFrameBody in
            WebSocketFrameLink(
                host: host, port: port, target: target, connectTimeout: connectTimeout,
                maximumFrameBody: maximumFrameBody, loop: loop, modes: modes, configuration: configuration, tls: tls)
        }
    }

    public var loop: RunLoop { connection.loop }
    public var modes: [RunLoop.Mode] { connection.tcp.modes }
    public var remoteAddress: SocketAddress? { connection.tcp.remoteAddress }
    public var hasUnreadInput: Bool { connection.hasUnreadInput }
    public var bufferedOutputBytes: Int { connection.bufferedOutputBytes }
    public var transport: IMLinkTransport { .webSocket }

    public func open(_ events: IMFrameLinkEvents) {
        connection.onMessage = { [weak self] _, message in self?.received(message, events) }
        connection.onClose = { [weak self] _, info in self?.lost(Self.closeReason(info), events) }
        guard let endpoint else {
            connection.onPong = { [weak self] _, _ in self?.awaitingPong = false }
            // The session ends when the peer's close frame (or its violation) arrives, not when TCP
            // ends: a peer that keeps its end of TCP open would keep the close handshake going until
            // the close timeout, and a login decided meanwhile would find no connection to answer on.
            connection.onClosing = { [weak self] _, cause in self?.lost(Self.closeReason(cause), events) }
            if let pingInterval { startPinging(every: pingInterval) }
            return
        }
        connection.onOpen = { _ in events.opened() }
        if connection.state == .connecting {
            connection.connect(host: endpoint.host, port: endpoint.port, target: endpoint.target, timeout: endpoint.timeout)
        }
    }

    /// The connection is gone for its owner, whatever the close handshake still does: told once.
    private func lost(_ reason: IMLinkCloseReason, _ events: IMFrameLinkEvents) {
        stopPinging()
        guard isReporting else { return }
        isReporting = false
        events.closed(reason)
    }

    private func received(_ message: WebSocketMessage, _ events: IMFrameLinkEvents) {
        guard isReporting else { return }
        let decoded: Result<IMFrame, IMEnvelopeError>
        switch message {
        case .binary(let bytes):
            decoded = encoding == .json ? .failure(mixed("binary")) : Self.frame(fromBinary: bytes, maximumBodyLength: maximumBodyLength)
            encoding = encoding ?? .binary
        case .text where endpoint != nil:
            // A client's link asked for binary frames; text means the peer is not speaking to it.
            return connection.close(code: .unsupportedData, reason: "binary IM frames expected")
        case .text(let text):
            decoded = encoding == .binary ? .failure(mixed("text")) : Self.frame(fromJSON: text, maximumBodyLength: maximumBodyLength)
            encoding = encoding ?? .json
        }
        switch decoded {
        case .success(let frame):
            events.received(frame)
            // One message is one read.
            if isReporting { events.readEnded() }
        case .failure(let error):
            events.failed(.linkEncoding(error.code, error.reason), error.serial)
        }
    }

    /// What the owner is told when the connection closed: the TCP failure when there was one, a
    /// violation with its close code, otherwise how it ended.
    static func closeReason(_ info: WebSocketCloseInfo) -> IMLinkCloseReason {
        if case .transport(let error) = info.error { return .failed(IMLinkFailure(error)) }
        if case .tls(let error) = info.error { return .failed(IMLinkFailure(error)) }
        if info.initiatedByPeer { return .peerClosed }
        if let error = info.error { return .failed(.protocolViolation(code: info.code.rawValue, reason: "\(error)")) }
        return IMLinkCloseReason(info.transport)
    }

    /// What a server's owner is told when the close began.
    static func closeReason(_ cause: WebSocketClosingCause) -> IMLinkCloseReason {
        switch cause {
        case .peerClosed: return .peerClosed
        case .failed(.transport(let error)): return .failed(IMLinkFailure(error))
        case .failed(let error):
            return .failed(.protocolViolation(code: (error.closeCode ?? .protocolError).rawValue, reason: "\(error)"))
        }
    }

    public func raiseInboundLimit(to bodyLength: Int) {
        maximumBodyLength = max(maximumBodyLength, bodyLength)
    }

    private func mixed(_ kind: String) -> IMEnvelopeError {
        IMEnvelopeError(.badRequest, "a \(kind) message on a connection that speaks \(encoding == .json ? "JSON text" : "binary frames")")
    }

    /// A binary message must hold exactly one whole frame: WebSocket already delimits messages, so a
    /// part of a frame or two frames in one message is a client bug, not a stream to reassemble.
    ///
    /// A SEND whose body is over `maximumBodyLength` but wholly in the message is a frame all the same
    /// (see "Sizes" above); a SEND that announces more than the message holds, and any other command
    /// over the limit, is `frameTooLarge`.
    public static func frame(fromBinary bytes: [UInt8], maximumBodyLength: Int) -> Result<IMFrame, IMEnvelopeError> {
        let isSend = bytes.count >= FrameHeader.size && (UInt16(bytes[6]) << 8 | UInt16(bytes[7])) == IMCommand.send.rawValue
        let wholeBody = min(bytes.count - FrameHeader.size, Int(UInt32.max))
        var decoder = FrameDecoder(maximumBodyLength: isSend ? max(maximumBodyLength, wholeBody) : maximumBodyLength)
        decoder.append(bytes)
        do {
            guard let frame = try decoder.next(), decoder.bufferedByteCount == 0 else {
                return .failure(IMEnvelopeError(.badRequest, "a binary message must hold exactly one IM frame (\(bytes.count) bytes do not)"))
            }
            return .success(frame)
        } catch {
            return .failure(IMEnvelopeError(error.statusCode, error.description))
        }
    }

    /// A JSON envelope's frame, held to the same body limit as a binary one once re-encoded: the
    /// limit is what every client can receive (a TCP client's decoder refuses larger DELIVERs), so a
    /// body that passed as JSON only because JSON spells it longer would be stored and then poison
    /// every recipient. A SEND over it is the exception (see "Sizes" above): the session refuses it.
    public static func frame(fromJSON text: String, maximumBodyLength: Int) -> Result<IMFrame, IMEnvelopeError> {
        let frame: IMFrame
        do {
            frame = try IMJSONEnvelope.decode(text)
        } catch {
            return .failure(error)
        }
        guard frame.body.count <= maximumBodyLength || frame.command == .send else {
            return .failure(
                IMEnvelopeError(
                    .frameTooLarge, "a \(frame.body.count)-byte body, over the limit of \(maximumBodyLength)", serial: frame.serial))
        }
        return .success(frame)
    }

    public func send(_ frame: IMFrame) throws(IMLinkFailure) {
        do {
            switch encoding ?? .binary {
            case .binary: try connection.send(binary: frame.encoded())
            case .json: try connection.send(text: IMJSONEnvelope.encode(frame))
            }
        } catch {
            if case .transport(let netError) = error { throw IMLinkFailure(netError) }
            throw .outputClosed
        }
    }

    public func close(for reason: IMSessionEndReason?) {
        isReporting = false
        stopPinging()
        guard let reason else { return connection.close() }
        connection.close(code: Self.closeCode(for: reason), reason: "\(reason)")
    }

    public func abort() {
        isReporting = false
        stopPinging()
        connection.abort()
    }

    /// The close code for why a session ended: 1000 after a logout, 1001 when the server stops, 1009
    /// for a frame over the size limit, 1008 (policy violation) for every other IM error — the
    /// WebSocket layer was fine, the IM protocol was not; the close reason and the ERROR frame
    /// before it say which. A closed transport sends nothing (the code is not used).
    public static func closeCode(for reason: IMSessionEndReason) -> WebSocketCloseCode {
        switch reason {
        case .loggedOut, .transportClosed: return .normalClosure
        case .serverShutdown: return .goingAway
        case .protocolError(.frameTooLarge, _): return .messageTooBig
        case .protocolError, .loginRefused, .loginTimeout, .keepaliveExpired, .tooSlow: return .policyViolation
        }
    }

    // MARK: pings

    private func startPinging(every interval: Duration) {
        let timer = RunLoopTimer(after: interval, repeating: interval, label: "im.websocket ping") { [weak self] _ in
            self?.pingDue()
        }
        pingTimer = timer
        pongSilence = SilenceDeadline(grace: interval, renewal: .perWait)
        for mode in modes { loop.add(timer, forMode: mode) }
    }

    private func pingDue() {
        guard connection.state == .open else { return stopPinging() }
        if awaitingPong {
            // The pong was due by this tick; a stalled loop fires timers before it reads, so unread
            // bytes put the verdict off to the next tick, once per ping.
            let now = loop.now
            switch pongSilence.judge(now, now: now, peerBytesWaiting: { self.hasUnreadInput }) {
            case .fine, .extend: return
            case .expired:
                // A whole interval without the pong: the peer (or the path to it) is gone.
                stopPinging()
                return connection.abort()
            }
        }
        awaitingPong = true
        pongSilence.startOver()
        try? connection.ping()
    }

    private func stopPinging() {
        pingTimer?.invalidate()
        pingTimer = nil
    }
}

extension IMServer {
    /// Runs an IM session for an open server-side WebSocket connection — from a ``WebSocketServer``'s
    /// `onConnection`, or an HTTP server's upgrade — through a ``WebSocketFrameLink``.
    /// Loop thread only.
    public func adopt(_ connection: WebSocketConnection, pingInterval: Duration? = .seconds(20)) {
        adopt(WebSocketFrameLink(connection: connection, maximumBodyLength: settings.maximumFrameBody, pingInterval: pingInterval))
    }
}
