/// Why a ``TCPConnection`` closed, delivered once to ``TCPConnection/onClose``.
public enum CloseReason: Equatable, Sendable, CustomStringConvertible {
    /// This side closed it with ``TCPConnection/close(immediately:)`` and the close completed: queued
    /// output flushed, output shut down and the peer's end of input seen (or after
    /// ``TCPConnection/shutdownOutput()`` once the peer had finished too). Nothing sent was lost to a
    /// reset from this side. A close that could not confirm this reports a failure instead.
    case closed
    /// This side dropped it with `close(immediately: true)`: queued output discarded, reset sent.
    case aborted
    /// The peer closed the connection (end of input, half-closure not allowed or output already shut);
    /// any output queued at that moment was flushed first.
    case peerClosed
    /// A failure: refused, reset, timed out, unresolvable, …
    case failed(NetError)

    /// The error, for a failure.
    public var error: NetError? {
        if case .failed(let error) = self { return error }
        return nil
    }

    public var description: String {
        switch self {
        case .closed: return "closed"
        case .aborted: return "aborted"
        case .peerClosed: return "peer closed"
        case .failed(let error): return "failed: \(error)"
        }
    }
}
