import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

@Suite("WebSocket: a server waiting for its connections' close handshakes")
struct ConnectionsClosedTests {
    @Test(
        "whenConnectionsClosed runs once the last connection handed out has finished its close handshake — not while a peer has yet to answer — and, with none open, later rather than inside the call"
    )
    func waitsForEveryHandshake() async throws {
        try await onLoopThread { try Self.waitsOnLoop() }
    }

    private static func waitsOnLoop() throws {
        let loop = RunLoop.current
        let server = WebSocketServer(configuration: WebSocketConfiguration(closeTimeout: .seconds(60)))
        var handedOut: [WebSocketConnection] = []
        server.onConnection = { _, connection in handedOut.append(connection) }
        try server.listen()
        defer { server.close() }

        var idleDone = false
        server.whenConnectionsClosed { idleDone = true }
        #expect(!idleDone, "ran inside the call")
        try #require(try spin(loop) { idleDone })

        let peers = [RawPeer(port: server.port), RawPeer(port: server.port)]
        try #require(try spin(loop) { handedOut.count == 2 && peers.allSatisfy { $0.head != nil } })
        for connection in handedOut { connection.close(code: .goingAway, reason: "stopping") }
        var allClosed = false
        server.whenConnectionsClosed { allClosed = true }
        try #require(try spin(loop) { peers.allSatisfy { $0.closeCode == .goingAway } })
        #expect(!allClosed && server.connectionCount == 2, "no peer has answered yet")

        let answer = WebSocketFrame(opcode: .close, payload: WebSocketMessageAssembler.closePayload(code: .goingAway, reason: ""))
        peers[0].send(answer)
        try #require(try spin(loop) { server.connectionCount == 1 })
        #expect(!allClosed, "one handshake is still under way")
        peers[1].send(answer)
        try #require(try spin(loop) { allClosed })
        #expect(server.connectionCount == 0)
    }
}
