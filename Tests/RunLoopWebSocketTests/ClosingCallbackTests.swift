import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// What the server side's connections reported, in the order the peers connected (loop thread only).
private final class ClosingReports {
    var connections: [WebSocketConnection] = []
    var closing: [Int: WebSocketClosingCause] = [:]
    /// Each connection's state when its onClosing ran.
    var stateAtClosing: [Int: WebSocketConnection.State] = [:]
    var closed: Set<Int> = []
}

@Suite("WebSocket: onClosing")
struct ClosingCallbackTests {
    @Test(
        "onClosing runs when the peer's close frame arrives or the peer breaks the protocol — at once, while onClose waits for a peer that holds TCP open — and not when this side started the close"
    )
    func closingIsReportedAtOnce() async throws {
        try await onLoopThread { try Self.closingOnLoop() }
    }

    private static func closingOnLoop() throws {
        let loop = RunLoop.current
        let reports = ClosingReports()
        let server = WebSocketServer(configuration: WebSocketConfiguration(closeTimeout: .seconds(60)))
        server.onConnection = { _, connection in
            let index = reports.connections.count
            reports.connections.append(connection)
            connection.onClosing = { connection, cause in
                reports.closing[index] = cause
                reports.stateAtClosing[index] = connection.state
            }
            connection.onClose = { _, _ in reports.closed.insert(index) }
        }
        try server.listen()
        defer { server.close() }
        var peers: [RawPeer] = []
        for index in 0..<3 {
            let peer = RawPeer(port: server.port)
            // Holds its end of TCP open after the server's close frame and end of stream.
            peer.tcp.allowsHalfClosure = index < 2
            peers.append(peer)
            try #require(try spin(loop) { peer.head != nil && reports.connections.count == index + 1 })
        }

        peers[0].send(WebSocketFrame(opcode: .close, payload: WebSocketMessageAssembler.closePayload(code: .normalClosure, reason: "bye")))
        peers[1].send(WebSocketFrame(opcode: .binary, payload: [1, 2, 3]), masked: false)
        try #require(try spin(loop) { reports.closing.count == 2 })
        #expect(reports.closing[0] == .peerClosed(code: .normalClosure, reason: "bye"))
        #expect(
            reports.closing[1].map { if case .failed(let error) = $0 { error.closeCode == .protocolError } else { false } } == true,
            "\(String(describing: reports.closing[1]))")
        #expect(reports.stateAtClosing == [0: .closing, 1: .closing])
        #expect(reports.closed.isEmpty, "onClose waits for the peers' end of TCP")
        #expect(throws: WebSocketError.notOpen) { try reports.connections[0].send(text: "too late") }

        // This side starts the close; the peer answers it: onClose only.
        reports.connections[2].close(code: .goingAway, reason: "restart")
        try #require(try spin(loop) { peers[2].closeCode == .goingAway })
        peers[2].send(WebSocketFrame(opcode: .close, payload: WebSocketMessageAssembler.closePayload(code: .goingAway, reason: "")))
        try #require(try spin(loop) { reports.closed.contains(2) })
        #expect(reports.closing[2] == nil)
        for connection in reports.connections { connection.abort() }
        try #require(try spin(loop) { reports.closed.count == 3 })
        #expect(reports.closing.count == 2, "once each")
    }
}
