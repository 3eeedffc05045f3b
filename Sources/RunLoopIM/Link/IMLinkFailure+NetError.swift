public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet

extension IMLinkFailure {
    /// A socket's failure in the IM layer's words (for links on ``TCPConnection``).
    public init(_ error: NetError) {
        switch error {
        case .connectionRefused: self = .refused
        case .connectionReset: self = .reset
        case .timedOut: self = .timedOut
        case .hostUnreachable, .networkUnreachable: self = .unreachable
        case .writeBufferFull(let limit): self = .outputFull(limit: limit)
        case .outputClosed: self = .outputClosed
        default: self = .other(error.description)
        }
    }
}

extension IMLinkCloseReason {
    /// How a ``TCPConnection`` ended, in the IM layer's words.
    public init(_ reason: CloseReason) {
        self.init(reason, failure: IMLinkFailure.init)
    }

    /// How any transport's connection ended, its failure translated by `failure`.
    init<Transport>(_ reason: LinkCloseReason<Transport>, failure: (Transport) -> IMLinkFailure) {
        switch reason {
        case .closed: self = .closed
        case .aborted: self = .aborted
        case .peerClosed: self = .peerClosed
        case .failed(let error): self = .failed(failure(error))
        }
    }
}
