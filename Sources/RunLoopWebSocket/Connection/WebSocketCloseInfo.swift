public import RunLoopNet

/// How a WebSocket connection ended, delivered once to ``WebSocketConnection/onClose``.
public struct WebSocketCloseInfo: Sendable, Equatable, CustomStringConvertible {
    /// The close handshake's code: the peer's if its close frame came first, otherwise the one this
    /// side sent (also when this side failed the connection: 1002, 1007, 1009…).
    /// ``WebSocketCloseCode/noStatusReceived`` (1005) for a close frame without a code,
    /// ``WebSocketCloseCode/abnormalClosure`` (1006) when no close frame was exchanged at all.
    public var code: WebSocketCloseCode
    /// The reason that came with ``code``.
    public var reason: String
    /// Whether the peer sent the first close frame.
    public var initiatedByPeer: Bool
    /// True when both close frames were exchanged and the TCP connection then ended in order.
    public var wasClean: Bool
    /// What failed, if anything: the peer's protocol violation this side closed for, a close
    /// timeout, a handshake or transport failure.
    public var error: WebSocketError?
    /// How the TCP connection underneath closed.
    public var transport: CloseReason

    public var description: String {
        var text =
            "\(code)\(reason.isEmpty ? "" : " \(reason)") (\(wasClean ? "clean" : "unclean"), by \(initiatedByPeer ? "peer" : "us"), tcp \(transport))"
        if let error { text += ": \(error)" }
        return text
    }
}
