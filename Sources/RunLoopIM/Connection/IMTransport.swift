import RunLoopKit
import RunLoopNet

/// What a transport tells its IM connection. Every callback runs on the loop's thread.
public struct IMTransportEvents {
    /// The transport is open: bytes may be written.
    public var opened: () -> Void
    /// Bytes arrived (any split: the IM layer reassembles frames itself).
    public var received: ([UInt8]) -> Void
    /// The transport closed by itself or failed; called at most once, never after ``IMTransport/close(graceful:)``.
    public var closed: (CloseReason) -> Void

    public init(opened: @escaping () -> Void, received: @escaping ([UInt8]) -> Void, closed: @escaping (CloseReason) -> Void) {
        self.opened = opened
        self.received = received
        self.closed = closed
    }
}

/// The byte pipe under an IM connection: TCP (``TCPTransport``), or WebSocket binary messages
/// (`WebSocketTransport` in the `RunLoopIMWebSocket` module, one frame per message). The IM logic is
/// written once, above this.
///
/// Loop thread only. A transport is opened once; after ``close(graceful:)`` it reports nothing more.
public protocol IMTransport: AnyObject {
    /// Starts connecting; `events` are called on the loop's thread from then on.
    func open(_ events: IMTransportEvents)
    /// Queues bytes for the peer.
    /// - Throws: a ``NetError`` (output closed, write buffer full): the IM layer drops the connection.
    func write(_ bytes: [UInt8]) throws(NetError)
    /// Closes: after flushing what was written (`graceful`), or at once.
    func close(graceful: Bool)
    /// Whether the peer's bytes wait unread (``TCPConnection/hasUnreadInput``): an answer timeout that
    /// fires then fired late — the loop was busy, not the peer silent — and gives the loop a moment
    /// to read them. A transport that cannot tell says false (the default).
    var hasUnreadInput: Bool { get }
}

extension IMTransport {
    public var hasUnreadInput: Bool { false }
}

/// Makes a fresh transport for each connection attempt.
public typealias IMConnector = (_ loop: RunLoop, _ modes: [RunLoop.Mode]) -> IMTransport

/// A TCP transport: a ``TCPConnection`` to `host`:`port`.
public final class TCPTransport: IMTransport {
    /// The underlying connection (for its addresses and buffer figures).
    public let connection: TCPConnection
    private let host: String
    private let port: UInt16
    private let connectTimeout: Duration
    private var isClosedByOwner = false

    /// - Parameters:
    ///   - options: socket options; keepalive and `TCP_USER_TIMEOUT` complement, not replace, the IM
    ///     heartbeat (they prove the socket, not the application).
    public init(host: String, port: UInt16, connectTimeout: Duration = .seconds(10), loop: RunLoop = .current,
                modes: [RunLoop.Mode] = [.common], options: TCPOptions = TCPOptions(), limits: TCPBufferLimits = TCPBufferLimits()) {
        self.host = host
        self.port = port
        self.connectTimeout = connectTimeout
        connection = TCPConnection(loop: loop, modes: modes, options: options, limits: limits)
    }

    public func open(_ events: IMTransportEvents) {
        connection.onConnect = { _ in events.opened() }
        connection.onData = { _, bytes in events.received(bytes) }
        connection.onClose = { [weak self] _, reason in
            guard let self, !self.isClosedByOwner else { return }
            events.closed(reason)
        }
        if connection.state == .idle {
            connection.connect(to: host, port: port, timeout: connectTimeout)
        }
    }

    public func write(_ bytes: [UInt8]) throws(NetError) {
        try connection.write(bytes)
    }

    public func close(graceful: Bool) {
        isClosedByOwner = true
        connection.close(immediately: !graceful)
    }

    public var hasUnreadInput: Bool { connection.hasUnreadInput }

    /// A connector for ``IMClient``: a new TCP connection to `host`:`port` per attempt.
    public static func connector(host: String, port: UInt16, connectTimeout: Duration = .seconds(10),
                                 options: TCPOptions = TCPOptions(), limits: TCPBufferLimits = TCPBufferLimits()) -> IMConnector {
        { loop, modes in
            TCPTransport(host: host, port: port, connectTimeout: connectTimeout, loop: loop, modes: modes, options: options, limits: limits)
        }
    }
}
