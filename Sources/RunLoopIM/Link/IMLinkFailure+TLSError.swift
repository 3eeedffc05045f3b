public import RunLoopIMCore
public import RunLoopKit
public import RunLoopTLS

extension IMLinkFailure {
    /// A TLS session's failure in the IM layer's words: a refused certificate keeps its check, a
    /// handshake that cannot succeed (not TLS, no common version, refused by the peer) is
    /// ``handshakeFailed(_:)`` — both final for a client — and the rest reads like TCP's.
    public init(_ error: TLSError) {
        switch error {
        case .certificateRejected(let problem): self = .certificateRejected(problem)
        case .notTLS, .protocolVersion, .alertReceived, .handshakeFailed: self = .handshakeFailed(error.description)
        case .handshakeTimedOut: self = .timedOut
        case .transport(let netError): self.init(netError)
        case .closedDuringHandshake, .truncated, .protocolError: self = .other(error.description)
        }
    }
}

extension IMLinkCloseReason {
    /// How a ``TLSConnection`` ended, in the IM layer's words.
    public init(_ reason: TLSCloseReason) {
        self.init(reason, failure: IMLinkFailure.init)
    }
}

extension TLSConnection: IMByteStream {
    public static func linkFailure(_ failure: TLSError) -> IMLinkFailure {
        IMLinkFailure(failure)
    }
}
