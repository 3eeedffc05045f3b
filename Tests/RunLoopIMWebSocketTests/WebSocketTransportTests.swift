import RunLoopIM
import RunLoopIMCore
import RunLoopIMWebSocket
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// An IM server reachable over TCP and over WebSocket (one listener each), on one store that outlives
/// it, so a test can "restart" it.
final class DualServer {
    let im: IMServer
    let web: WebSocketServer

    init(store: any IMServerStore, tcpPort: UInt16 = 0, webPort: UInt16? = 0) throws {
        im = IMServer(store: store)
        try im.listen(port: tcpPort)
        web = WebSocketServer()
        web.onConnection = { [im] _, connection in im.adopt(connection) }
        if let webPort { try web.listen(port: webPort) }
    }

    /// Down the way a crash looks: every connection reset, nothing said.
    func crash() {
        web.close()
        im.abort()
    }
}

/// Everything one client reported.
final class Recorder {
    var messages: [IMMessage] = []
    var finals: [String: [IMDeliveryState]] = [:]
    var disconnects = 0

    init(_ client: IMClient) {
        client.onMessage = { [weak self] _, message in self?.messages.append(message) }
        client.onDelivery = { [weak self] _, id, state in if state.isFinal { self?.finals[id, default: []].append(state) } }
        client.onDisconnect = { [weak self] _, _ in self?.disconnects += 1 }
    }

    func texts(from user: String) -> [String] { messages.filter { $0.from == user }.map(\.text) }
    /// Settled once, as delivered.
    func delivered(_ id: String) -> Bool {
        guard let states = finals[id], states.count == 1, case .stored = states[0] else { return false }
        return true
    }
}

func configuration(_ user: String) -> IMClientConfiguration {
    var configuration = IMClientConfiguration(user: user, password: "pw")
    configuration.heartbeat = .fixed(.seconds(1))
    configuration.answerTimeout = .seconds(5)
    configuration.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(300))
    return configuration
}

@Suite("IM over WebSocket")
struct WebSocketTransportTests {
    @Test(
        "an IMClient over WebSocketFrameLink and one over TCP: messages both ways exactly once, the IM heartbeat keeps the 1 s keepalive, offline delivery and reconnect after a server restart"
    )
    func chatAcrossRestart() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let store = InMemoryIMStore(accounts: ["web": "pw", "tcp": "pw"])
            var server = try DualServer(store: store)
            let tcpPort = server.im.port
            let webPort = server.web.port
            let web = IMClient(
                configuration: configuration("web"),
                connector: WebSocketFrameLink.connector(host: "127.0.0.1", port: webPort, connectTimeout: .seconds(5)))
            let tcp = IMClient(
                configuration: configuration("tcp"),
                connector: TCPFrameLink.connector(host: "127.0.0.1", port: tcpPort, connectTimeout: .seconds(5)))
            let webLog = Recorder(web)
            let tcpLog = Recorder(tcp)
            web.start()
            tcp.start()
            try #require(try spin(loop) { web.state == .online && tcp.state == .online })
            #expect(server.im.sessions.contains { $0.link is WebSocketFrameLink })

            let toTCP = try web.send("over websocket", to: .user("tcp"))
            let toWeb = try tcp.send("over tcp", to: .user("web"))
            try #require(
                try spin(loop) { webLog.delivered(toTCP) && tcpLog.delivered(toWeb) && webLog.messages.count == 1 && tcpLog.messages.count == 1 })
            #expect(tcpLog.texts(from: "web") == ["over websocket"])
            #expect(webLog.texts(from: "tcp") == ["over tcp"])

            // Idle for more than 1.5 × the 1 s keepalive: only the IM heartbeat over WebSocket keeps the session.
            let idleUntil = loop.now + .milliseconds(2_200)
            try spin(loop) { loop.now >= idleUntil }
            #expect(web.state == .online && webLog.disconnects == 0, "the server dropped a client whose heartbeats it got")

            // The node crashes; TCP comes back first, so a message for the WebSocket user waits in its inbox.
            server.crash()
            try #require(try spin(loop) { web.state != .online && tcp.state != .online })
            server = try DualServer(store: store, tcpPort: tcpPort, webPort: nil)
            try #require(try spin(loop) { tcp.state == .online })
            let whileAway = try tcp.send("while you were away", to: .user("web"))
            try #require(try spin(loop) { tcpLog.finals[whileAway] != nil || (try? store.undelivered(for: "web"))?.isEmpty == false })
            try server.web.listen(port: webPort)
            try #require(try spin(loop) { web.state == .online && webLog.messages.count == 2 && tcpLog.delivered(whileAway) })
            #expect(webLog.texts(from: "tcp") == ["over tcp", "while you were away"])
            #expect(webLog.disconnects == 1 && tcpLog.disconnects == 1)

            let after = try web.send("back again", to: .user("tcp"))
            try #require(try spin(loop) { webLog.delivered(after) && tcpLog.messages.count == 2 })
            #expect(tcpLog.texts(from: "web") == ["over websocket", "back again"])
            web.close()
            tcp.close()
            try spin(loop) { web.state == .closed(.userClosed) && tcp.state == .closed(.userClosed) }
            server.crash()
        }
    }
}
