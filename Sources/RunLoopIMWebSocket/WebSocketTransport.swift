import RunLoopIM
import RunLoopKit
import RunLoopNet
import RunLoopWebSocket

/// An ``IMTransport`` over a WebSocket client connection: each IM frame the client writes travels as
/// one binary message, exactly its TCP bytes; messages received are handed to the IM layer as bytes.
/// The IM heartbeat and ping-pong run above it unchanged (they are IM frames); pings from the server
/// are answered by the WebSocket layer.
///
/// Loop thread only. Opened once; after ``close(graceful:)`` it reports nothing more.
public final class WebSocketTransport: IMTransport {
    /// The WebSocket connection (its TCP connection has the addresses and buffer figures).
    public let connection: WebSocketConnection
    private let host: String
    private let port: UInt16
    private let target: String
    private let connectTimeout: Duration
    private var isClosedByOwner = false

    /// - Parameter target: the upgrade's request target (the chat node serves `/ws`).
    public init(host: String, port: UInt16, target: String = "/ws", connectTimeout: Duration = .seconds(10),
                loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common],
                configuration: WebSocketConfiguration = WebSocketConfiguration(),
                options: TCPOptions = TCPOptions(), limits: TCPBufferLimits = TCPBufferLimits()) {
        self.host = host
        self.port = port
        self.target = target
        self.connectTimeout = connectTimeout
        connection = WebSocketConnection(loop: loop, modes: modes, configuration: configuration, options: options, limits: limits)
    }

    public func open(_ events: IMTransportEvents) {
        connection.onOpen = { _ in events.opened() }
        connection.onMessage = { connection, message in
            switch message {
            case .binary(let bytes): events.received(bytes)
            // This transport asked for binary frames; text means the peer is not speaking to it.
            case .text: connection.close(code: .unsupportedData, reason: "binary IM frames expected")
            }
        }
        connection.onClose = { [weak self] _, info in
            guard let self, !self.isClosedByOwner else { return }
            events.closed(Self.closeReason(info))
        }
        if connection.state == .connecting {
            connection.connect(host: host, port: port, target: target, timeout: connectTimeout)
        }
    }

    public func write(_ bytes: [UInt8]) throws(NetError) {
        do {
            try connection.send(binary: bytes)
        } catch {
            if case .transport(let netError) = error { throw netError }
            throw .outputClosed
        }
    }

    public func close(graceful: Bool) {
        isClosedByOwner = true
        if graceful { connection.close() } else { connection.abort() }
    }

    public var hasUnreadInput: Bool { connection.tcp.hasUnreadInput }

    /// What the IM layer is told: the TCP failure when there was one, otherwise how it ended.
    static func closeReason(_ info: WebSocketCloseInfo) -> CloseReason {
        if case .transport(let error) = info.error { return .failed(error) }
        if info.initiatedByPeer { return .peerClosed }
        if info.error != nil { return .failed(.connectionReset) }
        return info.transport
    }

    /// A connector for ``IMClient``: a new WebSocket connection to `host`:`port` `target` per attempt.
    public static func connector(host: String, port: UInt16, target: String = "/ws", connectTimeout: Duration = .seconds(10),
                                 configuration: WebSocketConfiguration = WebSocketConfiguration()) -> IMConnector {
        { loop, modes in
            WebSocketTransport(host: host, port: port, target: target, connectTimeout: connectTimeout,
                               loop: loop, modes: modes, configuration: configuration)
        }
    }
}
