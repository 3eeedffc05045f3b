public import RunLoopKit

/// Why a ``TCPConnection`` closed, delivered once to ``TCPConnection/onClose``: ``LinkCloseReason``
/// with a ``NetError`` for the failure.
///
/// - `closed`: this side closed it with ``TCPConnection/close(immediately:)`` and the close completed:
///   queued output flushed, output shut down and the peer's end of input seen (or after
///   ``TCPConnection/shutdownOutput()`` once the peer had finished too). Nothing sent was lost to a
///   reset from this side. A close that could not confirm this reports a failure instead.
/// - `aborted`: this side dropped it with `close(immediately: true)`: queued output discarded, reset
///   sent.
/// - `peerClosed`: the peer closed the connection (end of input, half-closure not allowed or output
///   already shut); any output queued at that moment was flushed first.
/// - `failed`: refused, reset, timed out, unresolvable, …
public typealias CloseReason = LinkCloseReason<NetError>

extension CloseReason {
    /// The error, for a failure.
    public var error: NetError? { failure }
}
