public import RunLoopWebSocket

/// Which pages may open the node's WebSocket: its own page, and clients that are not pages.
///
/// Browsers send `Origin` with every WebSocket upgrade and let any site open any `ws://` address, so
/// without this check a page elsewhere could use a visitor's browser to register accounts on a node
/// at 127.0.0.1 or flood its password checks. Native clients (the terminal client, IMClient over
/// WebSocketFrameLink, scripts) send no `Origin` and are not affected.
public enum OriginPolicy {
    /// `nil` to accept `request`; otherwise the 403 to answer. Accepted: no `Origin` field, or an
    /// `http://` / `https://` origin naming the same host and port as the request's `Host` field.
    public static func refusal(for request: WebSocketUpgradeRequest) -> WebSocketHandshakeRefusal? {
        guard let origin = request.head.value(of: "Origin") else { return nil }
        guard let host = request.head.value(of: "Host"), !host.isEmpty else {
            return WebSocketHandshakeRefusal(status: 403, reason: "an upgrade with an Origin needs a Host")
        }
        let authority: Substring
        if origin.lowercased().hasPrefix("http://") {
            authority = origin.dropFirst("http://".count)
        } else if origin.lowercased().hasPrefix("https://") {
            authority = origin.dropFirst("https://".count)
        } else {
            return WebSocketHandshakeRefusal(status: 403, reason: "origin \(origin) is not this node's page")
        }
        guard authority.lowercased() == host.lowercased() else {
            return WebSocketHandshakeRefusal(status: 403, reason: "origin \(origin) is not this node's page (\(host))")
        }
        return nil
    }
}
