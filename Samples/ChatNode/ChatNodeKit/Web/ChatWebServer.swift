import Logging
import RunLoopIM
import RunLoopIMWebSocket
import RunLoopKit
import RunLoopNet
import RunLoopWebSocket

/// The chat node's HTTP listener: serves the browser page (``ChatWebRoute``) and upgrades `GET /ws` to
/// a WebSocket whose IM session the node's ``IMServer`` runs (``IMServer/adopt(_:pingInterval:)``).
/// Every other request gets a small plain-text refusal and its connection is closed; nothing else is
/// affected.
///
/// Threads: loop thread only, like its listener; every callback runs there.
public final class ChatWebServer {
    public let listener: TCPListener
    public let server: IMServer
    /// Limits and timeouts of the handshake and of every WebSocket connection.
    public var configuration: WebSocketConfiguration
    /// How often the server pings each WebSocket (browsers cannot ping, but answer pings).
    public var pingInterval: Duration
    public var logger: Logger
    /// Runs for every refused request, with its status (for logs and tests).
    public var onRefused: ((WebSocketHandshakeRefusal) -> Void)?

    /// Must be called on the loop's thread.
    public init(server: IMServer, loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common],
                configuration: WebSocketConfiguration = WebSocketConfiguration(), pingInterval: Duration = .seconds(20),
                logger: Logger = Logger(label: "chat-node.web")) {
        self.server = server
        self.configuration = configuration
        self.pingInterval = pingInterval
        self.logger = logger
        listener = TCPListener(loop: loop, modes: modes, logger: logger)
        listener.onAccept = { [weak self] _, tcp in
            guard let self else { return tcp.close(immediately: true) }
            self.accepted(tcp)
        }
    }

    /// The bound port while listening.
    public var port: UInt16 { listener.port }

    public func listen(host: String = "127.0.0.1", port: UInt16 = 0) throws(NetError) {
        try listener.listen(host: host, port: port)
    }

    /// Stops accepting; WebSocket sessions are the IM server's to end.
    public func close() { listener.close() }

    private func accepted(_ tcp: TCPConnection) {
        // A head larger than the limit, or one that never ends, closes the connection (RunLoopNet's
        // read limits): no request can make the node buffer without bound.
        tcp.read(upTo: [13, 10, 13, 10], maxLength: configuration.maxHandshakeSize,
                 timeout: configuration.handshakeTimeout) { [weak self] tcp, head in
            guard let self else { return tcp.close(immediately: true) }
            self.respond(tcp, head: head)
        }
    }

    private func respond(_ tcp: TCPConnection, head: [UInt8]) {
        switch ChatWebRoute.route(head) {
        case .asset(let asset):
            try? tcp.write(asset.response)
            tcp.close()
        case .upgrade(let request):
            WebSocketServer.upgrade(tcp, accepting: request, configuration: configuration, logger: logger) { connection in
                server.adopt(connection, pingInterval: pingInterval)
            }
        case .refuse(let refusal):
            logger.debug("refused \(tcp.remoteAddress?.description ?? "?"): \(refusal)")
            try? tcp.write(refusal.response)
            tcp.close()
            onRefused?(refusal)
        }
    }
}
