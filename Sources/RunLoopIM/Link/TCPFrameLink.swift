import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet

/// An ``IMFrameLink`` on a TCP connection, either side: frames reassembled from the byte stream by
/// their length prefix, written as their bytes.
///
/// A client's link connects when opened (``ByteStreamFrameLink/init(host:port:connectTimeout:maximumFrameBody:loop:modes:options:limits:)``,
/// or ``ByteStreamFrameLink/connector(host:port:connectTimeout:options:limits:)`` for ``IMClient``); a server's wraps a
/// connection its listener accepted (``ByteStreamFrameLink/init(connection:maximumBodyLength:skippableSendLength:)``).
///
/// Loop thread only, like its connection.
public typealias TCPFrameLink = ByteStreamFrameLink<TCPConnection>

extension ByteStreamFrameLink where Stream == TCPConnection {
    /// A link that connects to `host`:`port` when opened.
    /// - Parameters:
    ///   - options: socket options; keepalive and `TCP_USER_TIMEOUT` complement, not replace, the IM
    ///     heartbeat (they prove the socket, not the application).
    public convenience init(
        host: String, port: UInt16, connectTimeout: Duration = .seconds(10), maximumFrameBody: Int = 64 * 1024,
        loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common], options: TCPOptions = TCPOptions(),
        limits: TCPBufferLimits = TCPBufferLimits()
    ) {
        self.init(
            connecting: TCPConnection(loop: loop, modes: modes, options: options, limits: limits),
            maximumFrameBody: maximumFrameBody
        ) { connection in
            connection.connect(to: host, port: port, timeout: connectTimeout)
        }
    }

    /// A connector for ``IMClient``: a new TCP link to `host`:`port` per attempt.
    public static func connector(
        host: String, port: UInt16, connectTimeout: Duration = .seconds(10),
        options: TCPOptions = TCPOptions(), limits: TCPBufferLimits = TCPBufferLimits()
    ) -> IMConnector {
        { loop, modes, maximumFrameBody in
            TCPFrameLink(
                host: host, port: port, connectTimeout: connectTimeout, maximumFrameBody: maximumFrameBody,
                loop: loop, modes: modes, options: options, limits: limits)
        }
    }
}
