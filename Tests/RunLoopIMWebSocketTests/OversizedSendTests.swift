import RunLoopIM
import RunLoopIMCore
import RunLoopIMWebSocket
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// What a link reported to the session above it (loop thread only).
final class LinkReports {
    var received: [IMFrame] = []
    var failures: [(IMStatusCode, UInt32)] = []
    var closed: [String] = []

    var events: IMFrameLinkEvents {
        IMFrameLinkEvents(
            received: { [weak self] in self?.received.append($0) },
            failed: { [weak self] error, serial in self?.failures.append((error.statusCode, serial)) },
            closed: { [weak self] in self?.closed.append("\($0)") })
    }
}

/// The links a test's WebSocket server made, in the order the clients connected (loop thread only).
final class AcceptedLinks {
    var links: [WebSocketFrameLink] = []
    var reports: [LinkReports] = []
}

@Suite("IM over WebSocket: a SEND over the body limit")
struct OversizedSendTests {
    /// The chat node's frame limit.
    static let bodyLimit = 64 * 1024

    @Test(
        "a 70,000-character paste — binary, or JSON escaped at 6 bytes a character — fits the WebSocket message limit (1 MiB) and reaches the session as a SEND frame over the body limit; a JOIN over it still fails with frameTooLarge"
    )
    func pasteReachesTheSession() async throws {
        try await onLoopThread { try Self.pasteOnLoop() }
    }

    static func pasteOnLoop() throws {
        let loop = RunLoop.current
        // The configuration the chat node's listener uses (ChatWebServer's default).
        let configuration = WebSocketConfiguration()
        let web = WebSocketServer(configuration: configuration)
        let accepted = AcceptedLinks()
        web.onConnection = { _, connection in
            let link = WebSocketFrameLink(connection: connection, maximumBodyLength: bodyLimit, pingInterval: nil)
            let report = LinkReports()
            link.open(report.events)
            accepted.links.append(link)
            accepted.reports.append(report)
        }
        try web.listen()
        defer { web.close() }
        let binary = WebSocketConnection()
        let json = WebSocketConnection()
        let join = WebSocketConnection()
        for (index, client) in [binary, json, join].enumerated() {
            client.connect(host: "127.0.0.1", port: web.port, target: "/ws")
            // One at a time, so the reports are in the clients' order.
            try #require(try spin(loop) { client.state == .open && accepted.links.count == index + 1 })
        }
        let reports = accepted.reports

        var paste = IMChatMessage()
        paste.id = "paste-1"
        paste.user = "tom"
        paste.text = String(repeating: "x", count: 70_000)
        let send = IMFrame(command: .send, serial: 2, message: paste)
        try binary.send(binary: send.encoded())
        // The worst a browser's JSON.stringify makes of a character: a control character as \u0001.
        let escaped =
            #"{"command":"SEND","serial":3,"body":{"id":"paste-2","user":"tom","text":""#
            + String(repeating: #"\u0001"#, count: 70_000) + #""}}"#
        #expect(escaped.utf8.count > 420_000 && escaped.utf8.count < configuration.maximumMessageSize)
        try json.send(text: escaped)
        try join.send(text: #"{"command":"JOIN","serial":4,"body":{"room":"\#(String(repeating: "r", count: 70_000))"}}"#)

        try #require(try spin(loop) { reports[0].received.count == 1 && reports[1].received.count == 1 && reports[2].failures.count == 1 })
        #expect(reports[0].received == [send] && send.body.count > bodyLimit)
        let jsonSend = reports[1].received[0]
        #expect(jsonSend.command == .send && jsonSend.serial == 3 && jsonSend.body.count > bodyLimit)
        #expect(try jsonSend.decode(IMChatMessage.self).text == String(repeating: "\u{1}", count: 70_000))
        #expect(reports[2].received.isEmpty && reports[2].failures.first?.0 == .frameTooLarge && reports[2].failures.first?.1 == 4)
        #expect(
            reports.allSatisfy { $0.closed.isEmpty } && [binary, json, join].allSatisfy { $0.state == .open },
            "the WebSocket took every message: no 1009 from its own limit")
        for client in [binary, json, join] { client.abort() }
    }
}
