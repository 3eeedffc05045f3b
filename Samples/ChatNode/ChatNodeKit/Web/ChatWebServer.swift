public import Logging
public import RunLoopIM
import RunLoopIMCore
import RunLoopIMWebSocket
public import RunLoopKit
public import RunLoopNet
public import RunLoopWebSocket

/// The chat node's HTTP listener: a ``WebSocketServer`` that also serves the browser page
/// (``ChatWebRoute``) and hands each upgraded `/ws` connection to the node's ``IMServer``
/// (``IMServer/adopt(_:pingInterval:)``). Every other request gets a small plain-text refusal and its
/// connection is closed; nothing else is affected.
///
/// Threads: loop thread only, like its listener; every callback runs there.
public final class ChatWebServer {
    /// The listener with the handshake (its limits, its connection count, its address).
    public let webSocket: WebSocketServer
    /// Runs for every refused request — page or upgrade — with its status (for logs and tests).
    public var onRefused: ((WebSocketHandshakeRefusal) -> Void)?

    /// Must be called on the loop's thread.
    /// - Parameter pingInterval: how often the node pings each WebSocket (browsers cannot ping, but
    ///   answer pings).
    public init(
        server: IMServer, loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common],
        configuration: WebSocketConfiguration = WebSocketConfiguration(), pingInterval: Duration = .seconds(20),
        logger: Logger = Logger(label: "chat-node.web")
    ) {
        webSocket = WebSocketServer(loop: loop, modes: modes, configuration: configuration, logger: logger)
        webSocket.handleRequest = { [weak self] _, responder, head in self?.serve(responder, head: head) ?? false }
        webSocket.shouldAccept = OriginPolicy.refusal(for:)
        webSocket.onConnection = { [weak server] _, connection in
            guard let server else { return connection.abort() }
            server.adopt(connection, pingInterval: pingInterval)
        }
        webSocket.onRefused = { [weak self] _, refusal in self?.onRefused?(refusal) }
    }

    /// The bound port while listening.
    public var port: UInt16 { webSocket.port }

    public func listen(host: String = "127.0.0.1", port: UInt16 = 0) throws(NetError) {
        try webSocket.listen(host: host, port: port)
    }

    /// Stops accepting; WebSocket sessions are the IM server's to end.
    public func close() { webSocket.close() }

    /// Answers what is not an upgrade; `false` leaves `/ws` to the WebSocket handshake.
    private func serve(_ responder: HTTPResponder, head: [UInt8]) -> Bool {
        switch ChatWebRoute.route(head) {
        case .webSocket:
            return false
        case .asset(let asset):
            responder.respond(asset.response)
        case .refuse(let refusal):
            webSocket.logger.debug("refused \(responder.remoteAddress?.description ?? "?"): \(refusal)")
            responder.respond(refusal.response)
            onRefused?(refusal)
        }
        return true
    }
}
