import RunLoopKit
import RunLoopNet
import RunLoopTLS

/// A ``ByteStream`` a WebSocket connection runs on — a TCP connection, or a TLS session over one —
/// with its failures in the WebSocket's words.
protocol WebSocketByteStream: ByteStream {
    /// The TCP connection underneath (the stream itself for TCP).
    var underlyingTCP: TCPConnection { get }
    /// The stream's refusal of a write, or its failure.
    static func webSocketError(_ failure: Failure) -> WebSocketError
    /// How the stream closed, as ``WebSocketCloseInfo/transport`` tells it.
    static func transportReason(_ reason: LinkCloseReason<Failure>) -> CloseReason
}

extension TCPConnection: WebSocketByteStream {
    var underlyingTCP: TCPConnection { self }

    static func webSocketError(_ failure: NetError) -> WebSocketError { .transport(failure) }

    static func transportReason(_ reason: CloseReason) -> CloseReason { reason }
}

extension TLSConnection: WebSocketByteStream {
    var underlyingTCP: TCPConnection { tcp }

    static func webSocketError(_ failure: TLSError) -> WebSocketError {
        if case .transport(let error) = failure { return .transport(error) }
        return .tls(failure)
    }

    /// A TLS failure of the peer's making (a handshake it broke off, a session it cut short) ends the
    /// TCP connection from its side; any other ended with this side's alert and an orderly close.
    static func transportReason(_ reason: TLSCloseReason) -> CloseReason {
        switch reason {
        case .closed: return .closed
        case .aborted: return .aborted
        case .peerClosed: return .peerClosed
        case .failed(.transport(let error)): return .failed(error)
        case .failed(.truncated), .failed(.closedDuringHandshake): return .peerClosed
        case .failed: return .closed
        }
    }
}
