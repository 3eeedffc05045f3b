public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet

/// A connection an IM link can read frames from as a byte stream: a ``TCPConnection``, or a
/// `TLSConnection` over one. Both have the same shape (callbacks, `write`, `close`), so
/// ``ByteStreamFrameLink`` is written once on it; each stream only says how its failures read in the
/// IM layer's words.
///
/// Loop thread only, like the connection.
public protocol IMByteStream: AnyObject {
    /// The stream's own failure type.
    associatedtype Failure: Error & Equatable & Sendable

    var loop: RunLoop { get }
    var modes: [RunLoop.Mode] { get }
    var remoteAddress: SocketAddress? { get }
    /// Whether the peer's bytes wait unread (``IMFrameLink/hasUnreadInput``).
    var hasUnreadInput: Bool { get }
    /// Bytes queued and not yet taken by the kernel.
    var bufferedOutputBytes: Int { get }
    /// Runs once a stream that connects is ready for frames (a TLS stream: its handshake done).
    var onConnect: ((Self) -> Void)? { get set }
    var onData: ((Self, [UInt8]) -> Void)? { get set }
    /// Runs once when the stream has closed, with why.
    var onClose: ((Self, LinkCloseReason<Failure>) -> Void)? { get set }
    /// Queues `bytes` for the peer; throws the stream's refusal (its write limit, a closed output).
    func write(_ bytes: [UInt8]) throws(Failure)
    /// Closes after what was queued, or at once (a reset).
    func close(immediately: Bool)
    /// The stream's failure in the IM layer's words.
    static func linkFailure(_ failure: Failure) -> IMLinkFailure
}

extension TCPConnection: IMByteStream {
    public static func linkFailure(_ failure: NetError) -> IMLinkFailure {
        IMLinkFailure(failure)
    }
}
