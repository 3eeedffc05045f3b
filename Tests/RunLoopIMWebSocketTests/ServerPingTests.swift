import RunLoopIM
import RunLoopIMWebSocket
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// A peer that completes the upgrade by hand and then never reads again: it cannot answer pings.
final class DeafPeer {
    let tcp = TCPConnection()
    var upgraded = false

    init(port: UInt16) {
        let key = WebSocketHandshake.randomKey()
        tcp.onConnect = { tcp in try? tcp.write(WebSocketHandshake.request(host: "127.0.0.1", port: port, target: "/ws", key: key)) }
        tcp.read(upTo: [13, 10, 13, 10], maxLength: 4096, timeout: .seconds(5)) { [weak self] _, _ in self?.upgraded = true }
        tcp.connect(to: "127.0.0.1", port: port)
    }
}

@Suite("IM over WebSocket: server pings")
struct ServerPingTests {
    @Test("the server pings each WebSocket session: a peer that answers stays, one that cannot is dropped after two intervals, long before the login timeout")
    func pingsDropDeadPeers() async throws {
        try await onLoopThread { try Self.pingsOnLoop() }
    }

    static func pingsOnLoop() throws {
        let loop = RunLoop.current
        let server = IMServer(store: InMemoryIMStore())
        let web = WebSocketServer()
        web.onConnection = { [server] _, connection in server.adopt(connection, pingInterval: .milliseconds(100)) }
        try web.listen()
        defer {
            web.close()
            server.abort()
        }
        let answering = WebSocketConnection()
        answering.connect(host: "127.0.0.1", port: web.port, target: "/ws")
        let deaf = DeafPeer(port: web.port)
        try #require(try spin(loop) { deaf.upgraded && answering.state == .open && server.sessions.count == 2 })
        let answeringLink = try #require(server.sessions.compactMap { $0.link as? WebSocketSessionLink }.first { $0.remoteAddress?.port == answering.tcp.localAddress?.port })
        let start = loop.now
        try #require(try spin(loop) { server.sessions.count == 1 }, "the deaf peer was not dropped")
        #expect(loop.now - start < .seconds(2), "dropped by the pings, not by the 10 s login timeout")
        #expect(server.sessions.first?.link === answeringLink)
        let until = loop.now + .milliseconds(400)
        try spin(loop) { loop.now >= until }
        #expect(server.sessions.count == 1 && answering.state == .open, "a peer that answers pings stays")
        answering.close()
    }
}
