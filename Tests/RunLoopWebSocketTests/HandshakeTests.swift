import RunLoopWebSocket
import Testing

@Suite struct HandshakeTests {
    static func request(_ lines: [String]) -> [UInt8] { Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) }
    static let good = [
        "GET /chat HTTP/1.1", "Host: server.example.com", "Upgrade: websocket", "Connection: keep-alive, Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"
    ]

    @Test func acceptValueMatchesRFC6455() {
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func aValidRequestIsAcceptedAndTheClientAcceptsTheAnswer() throws {
        let request = try WebSocketHandshake.validateRequest(Self.request(Self.good)).get()
        #expect(request.target == "/chat")
        let response = WebSocketHandshake.acceptResponse(for: request)
        #expect(String(decoding: response, as: UTF8.self).contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="))
        try WebSocketHandshake.validateResponse(response, key: request.key)
        #expect(throws: WebSocketError.self) { try WebSocketHandshake.validateResponse(response, key: WebSocketHandshake.randomKey()) }
    }

    static func refusal(_ lines: [String]) -> WebSocketHandshakeRefusal? {
        if case .failure(let refusal) = WebSocketHandshake.validateRequest(request(lines)) { return refusal }
        return nil
    }

    @Test func refusalsSayWhy() {
        let missingKey = Self.refusal(Self.good.filter { !$0.hasPrefix("Sec-WebSocket-Key") })
        #expect(missingKey?.status == 400)
        #expect(missingKey?.reason == "missing Sec-WebSocket-Key")
        let wrongVersion = Self.refusal(Self.good.map { $0.hasPrefix("Sec-WebSocket-Version") ? "Sec-WebSocket-Version: 8" : $0 })
        #expect(wrongVersion?.status == 426)
        let answer = String(decoding: wrongVersion?.response ?? [], as: UTF8.self)
        #expect(answer.contains("\r\nSec-WebSocket-Version: 13\r\n"))
        #expect(Self.refusal(["POST /chat HTTP/1.1"] + Self.good.dropFirst())?.status == 405)
        #expect(Self.refusal(Self.good.filter { !$0.hasPrefix("Upgrade") })?.reason == "missing Upgrade: websocket")
        #expect(Self.refusal(Self.good.filter { !$0.hasPrefix("Connection") })?.status == 400)
        #expect(Self.refusal(Self.good.map { $0.hasPrefix("Sec-WebSocket-Key") ? "Sec-WebSocket-Key: short" : $0 })?.status == 400)
        #expect(Self.refusal(["GET /chat HTTP/1.0"] + Self.good.dropFirst())?.status == 400)
        #expect(Self.refusal(["garbage"])?.status == 400)
        let response = String(decoding: missingKey?.response ?? [], as: UTF8.self)
        #expect(response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
    }

    @Test func headerFieldsAreCaseInsensitiveAndTokenised() throws {
        let lines = Self.good.map { $0 == "Upgrade: websocket" ? "upgrade: WebSocket" : $0 }
        #expect(throws: Never.self) { try WebSocketHandshake.validateRequest(Self.request(lines)).get() }
    }
}
