/// Why a connection stopped being open before it closed, delivered to
/// ``WebSocketConnection/onClosing``: the peer ended it, while the close handshake and the TCP
/// connection may still take a while.
public enum WebSocketClosingCause: Sendable, Equatable, CustomStringConvertible {
    /// The peer's close frame arrived, with its code (`nil`: it carried none) and reason; this side
    /// answered it.
    case peerClosed(code: WebSocketCloseCode?, reason: String)
    /// The peer broke the protocol: this side sent a close frame with the violation's code (1002,
    /// 1007, 1009) and is ending the connection.
    case failed(WebSocketError)

    public var description: String {
        switch self {
        case .peerClosed(let code, let reason):
            return "the peer's close frame \(code.map { "\($0)" } ?? "without a code")\(reason.isEmpty ? "" : " \(reason)")"
        case .failed(let error):
            return "the peer broke the protocol: \(error)"
        }
    }
}
