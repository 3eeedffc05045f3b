import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet
public import RunLoopTLS

/// An ``IMFrameLink`` on a TLS session over TCP, either side: the frames of ``TCPFrameLink``, encrypted.
/// A client's link opens once the handshake is done; one whose handshake fails (a refused
/// certificate, a port that does not speak TLS) closes with ``IMLinkFailure/certificateRejected(_:)``
/// or ``IMLinkFailure/handshakeFailed(_:)``, which an ``IMClient`` does not retry. A server's wraps a
/// `TLSConnection` made from a connection its listener accepted
/// (``ByteStreamFrameLink/init(connection:maximumBodyLength:skippableSendLength:)``; ``IMServer/tlsContext``).
///
/// Loop thread only, like its connection.
public typealias TLSFrameLink = ByteStreamFrameLink<TLSConnection>

extension ByteStreamFrameLink where Stream == TLSConnection {
    /// A link that connects to `host`:`port` when opened and verifies the server against `context`.
    /// - Parameters:
    ///   - context: a client context (``TLSConfiguration/client(trust:)``): the trusted roots.
    ///   - serverName: the name the server's certificate must carry; `host` by default.
    public convenience init(
        host: String, port: UInt16, context: TLSContext, serverName: String? = nil, connectTimeout: Duration = .seconds(10),
        maximumFrameBody: Int = 64 * 1024, loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common],
        options: TCPOptions = TCPOptions(), limits: TCPBufferLimits = TCPBufferLimits()
    ) {
        self.init(
            connecting: TLSConnection(loop: loop, modes: modes, context: context, options: options, limits: limits),
            maximumFrameBody: maximumFrameBody
        ) { connection in
            connection.connect(to: host, port: port, serverName: serverName, timeout: connectTimeout)
        }
    }

    /// A connector for ``IMClient``: a new TLS link to `host`:`port` per attempt, all with `context`
    /// (made once: the CA file is read when it is made).
    public static func connector(
        host: String, port: UInt16, context: TLSContext, serverName: String? = nil, connectTimeout: Duration = .seconds(10),
        options: TCPOptions = TCPOptions(), limits: TCPBufferLimits = TCPBufferLimits()
    ) -> IMConnector {
        { loop, modes, maximumFrameBody in
            TLSFrameLink(
                host: host, port: port, context: context, serverName: serverName, connectTimeout: connectTimeout,
                maximumFrameBody: maximumFrameBody, loop: loop, modes: modes, options: options, limits: limits)
        }
    }
}
