public import RunLoopKit

/// A connection that carries a stream of bytes on a run loop: a ``TCPConnection``, or a TLS session
/// over one (`TLSConnection`). Both have this shape — callbacks, `write`, `close` — so what runs on a
/// byte stream (an IM frame link, a WebSocket connection) is written once, for either.
///
/// Loop thread only, like the connection: every callback runs there, from a loop callout.
public protocol ByteStream: AnyObject {
    /// The stream's own failure type.
    associatedtype Failure: Error & Equatable & Sendable

    var loop: RunLoop { get }
    var modes: [RunLoop.Mode] { get }
    var remoteAddress: SocketAddress? { get }
    /// Whether the peer's bytes wait in the socket, not yet read: a deadline that passes then was
    /// missed by a busy loop, not by a silent peer.
    var hasUnreadInput: Bool { get }
    /// Bytes queued and not yet taken by the kernel.
    var bufferedOutputBytes: Int { get }
    /// False while more than the high water mark of output waits.
    var isWritable: Bool { get }
    /// Runs once a stream that connects is ready for the peer's bytes (a TLS stream: its handshake done).
    var onConnect: ((Self) -> Void)? { get set }
    var onData: ((Self, [UInt8]) -> Void)? { get set }
    /// Runs when ``isWritable`` changes.
    var onWritabilityChanged: ((Self, Bool) -> Void)? { get set }
    /// Runs once when the stream has closed, with why.
    var onClose: ((Self, LinkCloseReason<Failure>) -> Void)? { get set }
    /// Queues `bytes` for the peer; throws the stream's refusal (its write limit, a closed output).
    func write(_ bytes: [UInt8]) throws(Failure)
    /// Closes after what was queued, or at once (a reset).
    func close(immediately: Bool)
    /// Stops taking the peer's bytes (TCP flow control slows it down) until ``resumeReading()``.
    func pauseReading()
    func resumeReading()
}

extension TCPConnection: ByteStream {}
