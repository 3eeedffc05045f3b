public import RunLoopKit

/// Why a link under an IM connection ended, in words every transport can say: the IM logic above it
/// (``IMDisconnectReason/transport(_:)``, ``IMClientMachine/transportClosed(generation:reason:now:)``)
/// decides on these alone, whether the link is TCP, WebSocket or in memory. The same four ends as a
/// TCP connection's (`LinkCloseReason`), failing with an ``IMLinkFailure``.
public typealias IMLinkCloseReason = LinkCloseReason<IMLinkFailure>

/// How a link failed, or why it refused a frame (``IMFrameLink``'s `send` throws it): the kinds
/// the IM logic tells apart (a reset or a timeout looks like a NAT mapping that expired), and the
/// transport's own words for the rest.
public enum IMLinkFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peer refused the connection.
    case refused
    /// The connection was reset (or broke: a write to a closed peer).
    case reset
    /// Connecting or waiting for the peer took too long (the transport's own timeout).
    case timedOut
    /// No route to the peer's host or network.
    case unreachable
    /// The output queue is at its limit: the peer does not read.
    case outputFull(limit: Int)
    /// The link takes nothing more: it is closing or closed.
    case outputClosed
    /// The peer broke the link's own encoding, below the IM frames: e.g. a WebSocket violation, with
    /// its close code and text.
    case protocolViolation(code: UInt16, reason: String)
    /// This client refused the server's TLS certificate: which check failed (a wrong name, expired,
    /// self-signed, an untrusted issuer).
    case certificateRejected(TLSCertificateProblem)
    /// The TLS handshake failed otherwise, in the transport's words: the peer does not speak TLS (a
    /// plaintext port), no protocol version both accept, the peer refused this side's handshake.
    case handshakeFailed(String)
    /// Anything else, in the transport's words.
    case other(String)

    /// Whether connecting again would only meet the same answer: the peer's certificate or its
    /// handshake, not the network, refused this connection. A client stops instead of retrying
    /// (``IMClosedReason/secureConnectionFailed(_:)``): a retry cannot fix a certificate, and an
    /// operator must see the cause rather than a client reconnecting for ever.
    public var isFinal: Bool {
        switch self {
        case .certificateRejected, .handshakeFailed: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .refused: return "connection refused"
        case .reset: return "connection reset by peer"
        case .timedOut: return "timed out"
        case .unreachable: return "host unreachable"
        case .outputFull(let limit): return "write refused: output queue limit of \(limit) bytes reached"
        case .outputClosed: return "output is closed"
        case .protocolViolation(let code, let reason): return "protocol violation (\(code))\(reason.isEmpty ? "" : ": \(reason)")"
        case .certificateRejected(let problem): return "certificate verify failed: \(problem)"
        case .handshakeFailed(let text): return text
        case .other(let text): return text
        }
    }
}
