public import Logging
public import RunLoopIM
import RunLoopIMCore
import RunLoopIMWebSocket
public import RunLoopKit
public import RunLoopNet
public import RunLoopWebSocket

/// The chat node's HTTP listener: a ``WebSocketServer`` that also serves the browser page and the
/// operations paths (``ChatWebRoute``: `/health`, `/ready`, `/metrics`, whose state ``readiness`` and
/// ``metricsText`` give) and hands each upgraded `/ws` connection to the node's ``IMServer``
/// (``IMServer/adopt(_:pingInterval:)``). Every other request gets a small plain-text refusal; each
/// answer closes its connection, and nothing else is affected.
///
/// Threads: loop thread only, like its listener; every callback runs there.
public final class ChatWebServer {
    /// The listener with the handshake (its limits, its connection count, its address).
    public let webSocket: WebSocketServer
    /// Runs for every refused request — page or upgrade — with its status (for logs and tests).
    public var onRefused: ((WebSocketHandshakeRefusal) -> Void)?
    /// What `/ready` answers from, asked at each request on the loop's thread; `nil`: 404.
    public var readiness: (() -> NodeReadiness)?
    /// The Prometheus text `/metrics` answers with, made at each request on the loop's thread; `nil`: 404.
    public var metricsText: (() -> [UInt8])?

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
        let route = ChatWebRoute.route(head)
        if route == .webSocket { return false }
        responder.respond(answer(route, from: responder.remoteAddress))
        return true
    }

    /// The bytes that answer `route` — any but the upgrade, which is the WebSocket server's.
    private func answer(_ route: ChatWebRoute, from peer: SocketAddress?) -> [UInt8] {
        switch route {
        case .asset(let asset):
            return asset.response
        case .health:
            return HTTPAnswer.text("ok").bytes
        case .ready:
            guard let readiness else { return answer(.refuse(Self.notServed), from: peer) }
            guard case .notReady(let reason) = readiness() else { return HTTPAnswer.text("ready").bytes }
            return WebSocketHandshakeRefusal(status: 503, reason: "not ready: \(reason)").response
        case .metrics:
            guard let metricsText else { return answer(.refuse(Self.notServed), from: peer) }
            return HTTPAnswer(contentType: "text/plain; version=0.0.4; charset=utf-8", body: metricsText()).bytes
        case .favicon:
            return HTTPAnswer(status: 204, fields: ["Cache-Control: max-age=86400"]).bytes
        case .headOnly(let get):
            return HTTPAnswer.headOnly(answer(get, from: peer))
        case .webSocket:
            return answer(.refuse(.init(status: 400, reason: "not a WebSocket upgrade")), from: peer)
        case .refuse(let refusal):
            webSocket.logger.debug("refused \(peer?.description ?? "?"): \(refusal)")
            onRefused?(refusal)
            return refusal.response
        }
    }

    private static let notServed = WebSocketHandshakeRefusal(status: 404, reason: "not served by this listener")
}
