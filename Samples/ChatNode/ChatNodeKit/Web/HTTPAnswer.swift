/// A small HTTP/1.1 answer that closes its connection: what the node's web port sends for
/// everything but the WebSocket upgrade and its refusals.
public struct HTTPAnswer: Equatable, Sendable {
    /// 200 or 204: errors are ``RunLoopWebSocket/WebSocketHandshakeRefusal``s.
    public var status: Int
    public var contentType: String?
    public var body: [UInt8]
    /// More response fields, such as `"Cache-Control: no-cache"`.
    public var fields: [String]

    public init(status: Int = 200, contentType: String? = nil, body: [UInt8] = [], fields: [String] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.fields = fields
    }

    /// A short plain-text answer (`/health`, `/ready`).
    public static func text(_ text: String) -> HTTPAnswer {
        HTTPAnswer(contentType: "text/plain; charset=utf-8", body: Array((text + "\n").utf8))
    }

    /// The whole answer: head, then body. A 204 has neither a body nor a length.
    public var bytes: [UInt8] {
        var head = "HTTP/1.1 \(status) \(status == 204 ? "No Content" : "OK")\r\n"
        for field in fields { head += field + "\r\n" }
        if let contentType { head += "Content-Type: \(contentType)\r\nX-Content-Type-Options: nosniff\r\n" }
        if status != 204 { head += "Content-Length: \(body.count)\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// What a HEAD request gets: the GET's answer up to the blank line after its head (its
    /// `Content-Length` still the GET body's, as RFC 9110 §9.3.2 wants), no body.
    public static func headOnly(_ response: [UInt8]) -> [UInt8] {
        let blankLine: [UInt8] = Array("\r\n\r\n".utf8)
        var end = 0
        while end + blankLine.count <= response.count {
            if response[end..<end + blankLine.count].elementsEqual(blankLine) { return Array(response[..<(end + blankLine.count)]) }
            end += 1
        }
        return response
    }
}
