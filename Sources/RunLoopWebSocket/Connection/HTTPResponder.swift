public import RunLoopNet

/// One plain HTTP request's answer, for a ``WebSocketServer/handleRequest`` that serves a page or a
/// health check beside the upgrade: the answer goes out on the connection's stream — encrypted on a
/// TLS port — and the connection closes once it is delivered.
///
/// Loop thread only, like the connection.
public struct HTTPResponder {
    let transport: WebSocketTransport

    init(_ transport: WebSocketTransport) {
        self.transport = transport
    }

    /// The client's address.
    public var remoteAddress: SocketAddress? { transport.tcp.remoteAddress }

    /// Queues the whole `response` (status line, fields, body) and closes the connection gracefully
    /// behind it. Once per request.
    public func respond(_ response: [UInt8]) {
        try? transport.write(response)
        transport.close()
    }
}
