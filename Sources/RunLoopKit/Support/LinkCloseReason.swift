/// Why a connection or link ended, delivered once to its owner: the four ends every transport has,
/// with the transport's own failure type. RunLoopNet's `CloseReason` (a TCP connection, failing with
/// a `NetError`) and RunLoopIMCore's `IMLinkCloseReason` (an IM link of any transport, failing with an
/// `IMLinkFailure`) are this type, so the two layers agree on what "closed", "aborted" and "peer
/// closed" mean while the IM layer stays free of sockets.
public enum LinkCloseReason<Failure: Error & Equatable & Sendable>: Equatable, Sendable, CustomStringConvertible {
    /// This side closed it in good order and the close completed: what it had sent was flushed first,
    /// and the peer's end seen (a TCP connection: output shut down and the peer's end of input read).
    /// A close that could not confirm this reports a failure instead.
    case closed
    /// This side dropped it at once: what was queued is discarded (a TCP reset).
    case aborted
    /// The peer ended it in good order (end of input, a WebSocket close frame); output queued at that
    /// moment was flushed first.
    case peerClosed
    /// It failed: refused, reset, timed out, unreachable, …
    case failed(Failure)

    /// The failure, when it failed.
    public var failure: Failure? {
        if case .failed(let failure) = self { return failure }
        return nil
    }

    public var description: String {
        switch self {
        case .closed: return "closed"
        case .aborted: return "aborted"
        case .peerClosed: return "peer closed"
        case .failed(let failure): return "failed: \(failure)"
        }
    }
}
