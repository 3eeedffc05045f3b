public import RunLoopWebSocket

/// One file of the browser page, served from the binary (``WebAssets``).
public struct WebAsset: Equatable, Sendable {
    /// The file's name in `Samples/ChatNode/Web`, e.g. `app.js`.
    public var name: String
    public var contentType: String
    public var body: String

    /// The whole HTTP answer: 200, the file, and the end of the connection (the page is three small
    /// files; keeping connections alive is not worth a request parser).
    public var response: [UInt8] {
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }
}

/// What the chat node's HTTP listener does with a request head: a pure function of its bytes.
///
/// `GET /` (and `/index.html`) → the page, `GET /<file>` → that file of the page, `GET /ws` → the
/// WebSocket upgrade (checked, and refused if bad, by ``WebSocketServer``: 400, 426); another method
/// → 405, another path → 404, a malformed head → 400, a version other than HTTP/1.0 or 1.1 → 505.
public enum ChatWebRoute: Equatable, Sendable {
    case asset(WebAsset)
    /// Let ``WebSocketServer`` check the upgrade and hand the connection to the IM server.
    case webSocket
    case refuse(WebSocketHandshakeRefusal)

    /// The path the IM protocol's WebSocket is served at.
    public static let webSocketPath = "/ws"

    public static func route(_ head: [UInt8]) -> ChatWebRoute {
        guard let parsed = HTTPHead.parse(head) else { return .refuse(.init(status: 400, reason: "malformed HTTP request")) }
        let (method, target, version) = parsed.startLine
        let path = String(target.prefix { $0 != "?" })
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            return .refuse(.init(status: 505, reason: "this server speaks HTTP/1.1"))
        }
        guard method == "GET" else {
            return .refuse(.init(status: 405, reason: "method \(method) not allowed; use GET", extraFields: ["Allow: GET"]))
        }
        if path == webSocketPath { return .webSocket }
        let name = path == "/" ? "index.html" : String(path.dropFirst())
        guard path.hasPrefix("/"), let body = WebAssets.files[name] else {
            return .refuse(.init(status: 404, reason: "no such page (the chat is at /, its WebSocket at \(webSocketPath))"))
        }
        return .asset(WebAsset(name: name, contentType: contentType(of: name), body: body))
    }

    static func contentType(of name: String) -> String {
        if name.hasSuffix(".html") { return "text/html; charset=utf-8" }
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        return "application/octet-stream"
    }
}
