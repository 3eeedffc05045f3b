import COpenSSL
import Foundation

/// A valid upgrade request, as the server accepted it.
public struct WebSocketUpgradeRequest: Sendable, Equatable {
    /// The request target, e.g. `/ws?room=1`.
    public var target: String
    /// The whole request head, for fields the application wants (Origin, cookies, …).
    public var head: HTTPHead
    /// The client's `Sec-WebSocket-Key`.
    public var key: String
}

/// Why the server refused an upgrade request: the HTTP status it answers with and why.
public struct WebSocketHandshakeRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var reason: String
    /// Extra response fields (426 names the version this server speaks).
    public var extraFields: [String]

    /// A refusal with `status` (e.g. 404, 403), a one-line `reason` (sent as the body) and extra
    /// response fields such as `"Sec-WebSocket-Version: 13"`.
    public init(status: Int, reason: String, extraFields: [String] = []) {
        self.status = status
        self.reason = reason
        self.extraFields = extraFields
    }

    public var description: String { "\(status) \(Self.phrase(status)): \(reason)" }

    /// The whole refusal: a small plain-text response that closes the connection.
    public var response: [UInt8] {
        let body = reason + "\n"
        var text = "HTTP/1.1 \(status) \(Self.phrase(status))\r\n"
        for field in extraFields { text += field + "\r\n" }
        text +=
            "Content-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return Array((text + body).utf8)
    }

    static func phrase(_ status: Int) -> String {
        switch status {
        case 400: return "Bad Request"
        case 404: return "Not Found"
        case 403: return "Forbidden"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 426: return "Upgrade Required"
        case 431: return "Request Header Fields Too Large"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Error"
        }
    }
}

/// The opening handshake (RFC 6455 §4) as pure functions: parse and check a request, build the
/// answer; build a request, check the answer.
public enum WebSocketHandshake {
    /// The GUID RFC 6455 §1.3 appends to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for `key`: base64(SHA-1(key + GUID)).
    public static func acceptValue(forKey key: String) -> String {
        let input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // SHA-1 is in OpenSSL's default provider; only a FIPS-only configuration lacks it, and
        // then no WebSocket handshake can be answered at all.
        let status = EVP_Digest(input, input.count, &digest, &length, EVP_sha1(), nil)
        precondition(status == 1, "OpenSSL has no SHA-1 (a FIPS-only configuration?): RFC 6455 needs it")
        return Data(digest.prefix(Int(length))).base64EncodedString()
    }

    /// A fresh `Sec-WebSocket-Key`: 16 random bytes, base64.
    public static func randomKey() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString()
    }

    // MARK: server

    /// Checks a request head (bytes up to and including the blank line) as a WebSocket upgrade.
    /// - Returns: the request, or the refusal to send: 400 for a malformed head or missing field,
    ///   405 for a method other than GET, 426 (with `Sec-WebSocket-Version: 13`) for another version.
    public static func validateRequest(_ bytes: [UInt8]) -> Result<WebSocketUpgradeRequest, WebSocketHandshakeRefusal> {
        guard let head = HTTPHead.parse(bytes) else { return .failure(refusal(400, "malformed HTTP request")) }
        let (method, target, version) = head.startLine
        guard method == "GET" else { return .failure(refusal(405, "method \(method) not allowed; use GET", ["Allow: GET"])) }
        guard version == "HTTP/1.1" else { return .failure(refusal(400, "\(version) cannot upgrade; use HTTP/1.1")) }
        guard head.value(of: "Host") != nil else { return .failure(refusal(400, "missing Host")) }
        guard head.field("Upgrade", containsToken: "websocket") else {
            return .failure(refusal(400, "missing Upgrade: websocket"))
        }
        guard head.field("Connection", containsToken: "Upgrade") else {
            return .failure(refusal(400, "missing Connection: Upgrade"))
        }
        // The version before the key: a client of another version learns which one to speak.
        guard head.value(of: "Sec-WebSocket-Version") == "13" else {
            return .failure(refusal(426, "unsupported Sec-WebSocket-Version; this server speaks 13", ["Sec-WebSocket-Version: 13"]))
        }
        guard let key = head.value(of: "Sec-WebSocket-Key") else { return .failure(refusal(400, "missing Sec-WebSocket-Key")) }
        guard let decoded = Data(base64Encoded: key), decoded.count == 16 else {
            return .failure(refusal(400, "Sec-WebSocket-Key is not 16 bytes in base64"))
        }
        return .success(WebSocketUpgradeRequest(target: target, head: head, key: key))
    }

    /// The 101 answer to an accepted request. No extension and no subprotocol is selected.
    public static func acceptResponse(for request: WebSocketUpgradeRequest) -> [UInt8] {
        Array(
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(acceptValue(forKey: request.key))\r\n\r\n").utf8)
    }

    static func refusal(_ status: Int, _ reason: String, _ extra: [String] = []) -> WebSocketHandshakeRefusal {
        WebSocketHandshakeRefusal(status: status, reason: reason, extraFields: extra)
    }

    // MARK: client

    /// The upgrade request a client sends for `target` on `host` (with `:port` unless it is 80).
    public static func request(host: String, port: UInt16, target: String, key: String, extraFields: [String] = []) -> [UInt8] {
        let hostField = port == 80 ? host : "\(host):\(port)"
        var text =
            "GET \(target) HTTP/1.1\r\nHost: \(hostField)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for field in extraFields { text += field + "\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// Checks the server's answer to a request sent with `key`.
    /// - Throws: ``WebSocketError/handshakeFailed(_:)`` saying what was wrong.
    public static func validateResponse(_ bytes: [UInt8], key: String) throws(WebSocketError) {
        guard let head = HTTPHead.parse(bytes) else { throw .handshakeFailed("malformed HTTP response") }
        let (version, status, phrase) = head.startLine
        guard version == "HTTP/1.1" else { throw .handshakeFailed("unexpected version \(version)") }
        guard status == "101" else { throw .handshakeFailed("server answered \(status) \(phrase)") }
        guard head.field("Upgrade", containsToken: "websocket") else { throw .handshakeFailed("missing Upgrade: websocket") }
        guard head.field("Connection", containsToken: "Upgrade") else { throw .handshakeFailed("missing Connection: Upgrade") }
        guard head.value(of: "Sec-WebSocket-Accept") == acceptValue(forKey: key) else {
            throw .handshakeFailed("wrong or missing Sec-WebSocket-Accept")
        }
        // We offered none: an extension or subprotocol in the answer cannot be honoured.
        if let extensions = head.value(of: "Sec-WebSocket-Extensions") { throw .handshakeFailed("unrequested extension \(extensions)") }
        if let proto = head.value(of: "Sec-WebSocket-Protocol") { throw .handshakeFailed("unrequested subprotocol \(proto)") }
    }
}
