public import RunLoopIMCore
public import RunLoopNet

/// A ``ByteStream`` an IM link can read frames from: a ``TCPConnection``, or a `TLSConnection` over
/// one. ``ByteStreamFrameLink`` is written once on it; each stream only says how its failures read in
/// the IM layer's words.
///
/// Loop thread only, like the connection.
public protocol IMByteStream: ByteStream {
    /// The stream's failure in the IM layer's words.
    static func linkFailure(_ failure: Failure) -> IMLinkFailure
}

extension TCPConnection: IMByteStream {
    public static func linkFailure(_ failure: NetError) -> IMLinkFailure {
        IMLinkFailure(failure)
    }
}
