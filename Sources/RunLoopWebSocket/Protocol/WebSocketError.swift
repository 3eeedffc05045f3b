public import RunLoopNet
public import RunLoopTLS

/// Why a WebSocket connection failed. Protocol violations carry the close code sent to the peer
/// (``closeCode``); the others describe the handshake, the transport or a misuse of the API.
public enum WebSocketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peer broke RFC 6455 framing rules (closes with 1002).
    case protocolViolation(String)
    /// A text message or close reason was not valid UTF-8 (closes with 1007).
    case invalidUTF8
    /// A frame announced more payload than ``WebSocketConfiguration/maximumFrameSize`` (closes with 1009).
    case frameTooLarge(limit: Int)
    /// A message grew past ``WebSocketConfiguration/maximumMessageSize`` (closes with 1009).
    case messageTooLarge(limit: Int)
    /// The opening handshake failed; the text says what was wrong (client: the server's answer;
    /// server: the refusal sent).
    case handshakeFailed(String)
    /// The peer did not complete the close handshake within ``WebSocketConfiguration/closeTimeout``.
    case closeTimedOut
    /// The connection is not open: nothing can be sent.
    case notOpen
    /// A control frame payload (ping, pong, close reason) longer than 125 bytes was asked for.
    case controlPayloadTooLarge(Int)
    /// The TCP connection failed or refused a write.
    case transport(NetError)
    /// The TLS session under the connection failed (its handshake, a broken record, a peer that
    /// ended without close_notify); a failure of the TCP connection under it is ``transport(_:)``.
    case tls(TLSError)

    /// The close code a violation is answered with; `nil` for errors that are not the peer's framing.
    public var closeCode: WebSocketCloseCode? {
        switch self {
        case .protocolViolation: return .protocolError
        case .invalidUTF8: return .invalidPayload
        case .frameTooLarge, .messageTooLarge: return .messageTooBig
        case .handshakeFailed, .closeTimedOut, .notOpen, .controlPayloadTooLarge, .transport, .tls: return nil
        }
    }

    public var description: String {
        switch self {
        case .protocolViolation(let what): return "protocol violation: \(what)"
        case .invalidUTF8: return "invalid UTF-8 in text"
        case .frameTooLarge(let limit): return "frame larger than \(limit) bytes"
        case .messageTooLarge(let limit): return "message larger than \(limit) bytes"
        case .handshakeFailed(let what): return "handshake failed: \(what)"
        case .closeTimedOut: return "close handshake timed out"
        case .notOpen: return "connection not open"
        case .controlPayloadTooLarge(let count): return "control payload of \(count) bytes (at most 125)"
        case .transport(let error): return "transport: \(error)"
        case .tls(let error): return "TLS: \(error)"
        }
    }
}
