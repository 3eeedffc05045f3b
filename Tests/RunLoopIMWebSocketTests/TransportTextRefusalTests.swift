import RunLoopIM
import RunLoopIMCore
import RunLoopIMWebSocket
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// What the server side of the refusal test saw (a class: state captured by escaping closures).
final class TextServerLog {
    var closeCodes: [WebSocketCloseCode] = []
    var disconnects: [IMDisconnectReason] = []
}

@Suite("IM over WebSocket: the client transport")
struct TransportTextRefusalTests {
    @Test(
        "The client's WebSocketFrameLink takes binary frames only: a text message from the server closes the link with 1003; the IMClient reports the drop and reconnects (and is refused again)"
    )
    func textIsRefused() async throws {
        try await onLoopThread { try Self.refusalOnLoop() }
    }

    static func refusalOnLoop() throws {
        let loop = RunLoop.current
        let log = TextServerLog()
        let web = WebSocketServer()
        web.onConnection = { _, connection in
            connection.onClose = { _, info in log.closeCodes.append(info.code) }
            try? connection.send(text: "this peer speaks JSON")
        }
        try web.listen()
        defer { web.close() }
        let client = IMClient(
            configuration: IMClientConfiguration(user: "x", password: "pw"),
            connector: WebSocketFrameLink.connector(host: "127.0.0.1", port: web.port))
        client.onDisconnect = { _, reason in log.disconnects.append(reason) }
        client.start()
        try #require(try spin(loop) { log.closeCodes.count >= 2 && log.disconnects.count >= 2 })
        #expect(log.closeCodes.allSatisfy { $0 == .unsupportedData }, "\(log.closeCodes)")
        #expect(client.state != .online)
        client.close()
        try spin(loop) { client.state == .closed(.userClosed) }
    }
}
