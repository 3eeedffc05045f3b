public import RunLoopKit
public import RunLoopNet

/// Why a TLS connection failed, in the terms a person needs: which certificate check refused the
/// peer, a protocol version neither side accepts, a peer that does not speak TLS at all. OpenSSL's own
/// reason text is kept where it adds to that.
public enum TLSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// This client refused the server's certificate (see ``TLSCertificateProblem``).
    case certificateRejected(TLSCertificateProblem)
    /// No protocol version both sides accept: the peer offered or chose one older than TLS 1.2 (or
    /// than ``TLSConfiguration/minimumVersion``).
    case protocolVersion(String)
    /// What the peer sent is not TLS: plaintext, an HTTP request, anything else.
    case notTLS(String)
    /// The peer ended the handshake or the session with a fatal alert (a client that refused this
    /// server's certificate sends one, say); the text is the alert's.
    case alertReceived(String)
    /// Any other handshake failure; the text is OpenSSL's reason.
    case handshakeFailed(String)
    /// The handshake did not finish within ``TLSConfiguration/handshakeTimeout``.
    case handshakeTimedOut
    /// The peer ended the TCP connection in the middle of the handshake.
    case closedDuringHandshake
    /// After the handshake, a record that breaks the protocol; the text is OpenSSL's reason.
    case protocolError(String)
    /// The peer ended the TCP connection without a close_notify: what it sent last may be cut short.
    case truncated
    /// The TCP connection underneath failed (reset, timed out, refused), or refused a write (its
    /// ``NetError/writeBufferFull(limit:)``, ``NetError/outputClosed``).
    case transport(NetError)

    public var description: String {
        switch self {
        case .certificateRejected(let problem): return "certificate verify failed: \(problem)"
        case .protocolVersion(let reason): return "no TLS version both sides accept (TLS 1.2 or later needed): \(reason)"
        case .notTLS(let reason): return "the peer does not speak TLS: \(reason)"
        case .alertReceived(let alert): return "the peer refused the handshake: \(alert)"
        case .handshakeFailed(let reason): return "TLS handshake failed: \(reason)"
        case .handshakeTimedOut: return "TLS handshake timed out"
        case .closedDuringHandshake: return "the peer closed the connection during the TLS handshake"
        case .protocolError(let reason): return "TLS protocol error: \(reason)"
        case .truncated: return "the peer closed the connection without a TLS close_notify"
        case .transport(let error): return "\(error)"
        }
    }
}

/// Why a ``TLSConnection`` closed, delivered once to ``TLSConnection/onClose``: ``LinkCloseReason`` with
/// a ``TLSError`` for the failure.
///
/// - `closed`: this side closed it with ``TLSConnection/close(immediately:)`` once open: its
///   close_notify went out after everything written, and the TCP connection closed in good order.
/// - `aborted`: this side dropped it with `close(immediately: true)` (a TCP reset).
/// - `peerClosed`: the peer's close_notify arrived; this side answered with its own and closed.
/// - `failed`: the handshake failed, the peer broke the protocol or ended without a close_notify, or
///   the TCP connection failed.
public typealias TLSCloseReason = LinkCloseReason<TLSError>
