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
        HTTPAnswer(contentType: contentType, body: Array(body.utf8), fields: ["Cache-Control: no-cache"]).bytes
    }
}

/// What the chat node's HTTP listener does with a request head: a pure function of its bytes.
///
/// `GET /` (and `/index.html`) → the page, `GET /<file>` → that file of the page, `GET /ws` → the
/// WebSocket upgrade (checked, and refused if bad, by ``WebSocketServer``: 400, 426); `/health`,
/// `/ready` and `/metrics` → the node's state, which the server fills in; `/favicon.ico` → 204 (the
/// page has no icon; browsers stop asking). `HEAD` of any of them → the GET's head without its body
/// (of `/ws`: 405, an upgrade is a GET). Another method → 405, another path → 404, a malformed head
/// → 400, a version other than HTTP/1.0 or 1.1 → 505.
public enum ChatWebRoute: Equatable, Sendable {
    case asset(WebAsset)
    /// Let ``WebSocketServer`` check the upgrade and hand the connection to the IM server.
    case webSocket
    /// Alive: 200 whenever the loop gets to answer.
    case health
    /// 200 when the store (and a cluster's Redis) is reachable, 503 with the reason otherwise.
    case ready
    /// The node's metrics in Prometheus's text format.
    case metrics
    case favicon
    case refuse(WebSocketHandshakeRefusal)
    /// A HEAD request: this GET route's answer, head only.
    indirect case headOnly(ChatWebRoute)

    /// The path the IM protocol's WebSocket is served at.
    public static let webSocketPath = "/ws"

    public static func route(_ head: [UInt8]) -> ChatWebRoute {
        guard let parsed = HTTPHead.parse(head) else { return .refuse(.init(status: 400, reason: "malformed HTTP request")) }
        let (method, target, version) = parsed.startLine
        let path = String(target.prefix { $0 != "?" })
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            return .refuse(.init(status: 505, reason: "this server speaks HTTP/1.1"))
        }
        switch method {
        case "GET":
            return get(path)
        case "HEAD":
            let route = get(path)
            return .headOnly(route == .webSocket ? notAllowed("HEAD", hint: "the WebSocket upgrade is a GET") : route)
        default:
            return notAllowed(method, hint: "use GET")
        }
    }

    private static func get(_ path: String) -> ChatWebRoute {
        switch path {
        case webSocketPath: return .webSocket
        case "/health": return .health
        case "/ready": return .ready
        case "/metrics": return .metrics
        case "/favicon.ico": return .favicon
        default: break
        }
        let name = path == "/" ? "index.html" : String(path.dropFirst())
        guard path.hasPrefix("/"), let body = WebAssets.files[name] else {
            return .refuse(.init(status: 404, reason: "no such page (the chat is at /, its WebSocket at \(webSocketPath))"))
        }
        return .asset(WebAsset(name: name, contentType: contentType(of: name), body: body))
    }

    private static func notAllowed(_ method: String, hint: String) -> ChatWebRoute {
        .refuse(.init(status: 405, reason: "method \(method) not allowed; \(hint)", extraFields: ["Allow: GET, HEAD"]))
    }

    static func contentType(of name: String) -> String {
        if name.hasSuffix(".html") { return "text/html; charset=utf-8" }
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        return "application/octet-stream"
    }
}
