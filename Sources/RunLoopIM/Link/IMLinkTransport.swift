/// What carries an ``IMFrameLink``'s frames: the label value of the server's session counts.
public enum IMLinkTransport: String, Sendable, CaseIterable {
    /// The IM port: frames on a TCP byte stream (TLS or not).
    case tcp
    /// IM frames in WebSocket messages (a browser, or a client behind an HTTP proxy).
    case webSocket = "websocket"
    /// Anything else: an in-memory link in a test.
    case other
}
