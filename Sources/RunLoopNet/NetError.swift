#if canImport(Glibc)
import Glibc
#endif

/// Why a network operation failed or a connection closed. Every failure of a ``TCPConnection`` or a
/// ``TCPListener`` is reported with one of these; none of them stops the loop or affects other
/// connections.
public enum NetError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peer answered the connection attempt with a reset: nothing listens on that port (ECONNREFUSED).
    case connectionRefused
    /// No route to the host (EHOSTUNREACH).
    case hostUnreachable
    /// No route to the host's network (ENETUNREACH).
    case networkUnreachable
    /// A timeout expired; the phase says which one.
    case timedOut(TimeoutPhase)
    /// The host name could not be turned into an address.
    case resolutionFailed(host: String, reason: String)
    /// The peer reset the connection (ECONNRESET), or output went to a peer that had already gone (EPIPE).
    case connectionReset
    /// The peer closed its side of the connection.
    case peerClosed
    /// A listener refused a connection because it already serves `limit` connections.
    case listenerFull(limit: Int)
    /// The local address is taken by another socket (EADDRINUSE).
    case addressInUse
    /// The local address does not belong to this host (EADDRNOTAVAIL).
    case addressNotAvailable
    /// The text is not an IP address (or a host name where only an IP literal is allowed).
    case invalidAddress(String)
    /// A write would take the output queue past its hard limit; nothing of that write was queued.
    case writeBufferFull(limit: Int)
    /// Output was shut down (``TCPConnection/shutdownOutput()``, ``TCPConnection/close(immediately:)``)
    /// or the connection is closed: no more writes.
    case outputClosed
    /// `read(upTo:maximumLength:)` saw `limit` bytes without the delimiter.
    case delimiterNotFound(limit: Int)
    /// The loop's thread ended while the connection or listener was open.
    case loopTornDown
    /// Any other system call failure: the errno value and the call that failed.
    case system(errno: Int32, operation: String)

    /// Which timeout of a connection expired.
    public enum TimeoutPhase: String, Sendable, Equatable {
        /// Resolving and connecting took longer than the connect timeout.
        case connect
        /// No input arrived within the read timeout (and ``TCPConnection/shouldTimeoutRead`` did not extend it).
        case read
        /// Queued output made no progress within the write timeout.
        case write
        /// A graceful close flushed and shut down its output, but the peer neither ended its input nor
        /// acknowledged more of what was sent within ``TCPConnection/lingerTimeout``: the last bytes may
        /// not have been read.
        case linger
        /// The kernel gave up (ETIMEDOUT): keepalive probes or unacknowledged data went unanswered,
        /// see ``TCPOptions/keepAlive`` and ``TCPOptions/userTimeout``.
        case transport
    }

    public var description: String {
        switch self {
        case .connectionRefused: return "connection refused"
        case .hostUnreachable: return "host unreachable"
        case .networkUnreachable: return "network unreachable"
        case .timedOut(let phase): return "\(phase.rawValue) timed out"
        case .resolutionFailed(let host, let reason): return "cannot resolve \(host): \(reason)"
        case .connectionReset: return "connection reset by peer"
        case .peerClosed: return "peer closed the connection"
        case .listenerFull(let limit): return "listener is full (\(limit) connections)"
        case .addressInUse: return "address in use"
        case .addressNotAvailable: return "address not available"
        case .invalidAddress(let text): return "invalid address: \(text)"
        case .writeBufferFull(let limit): return "write refused: output queue limit of \(limit) bytes reached"
        case .outputClosed: return "output is closed"
        case .delimiterNotFound(let limit): return "no delimiter within \(limit) bytes"
        case .loopTornDown: return "the run loop's thread ended"
        case .system(let code, let operation): return "\(operation) failed: \(String(cString: strerror(code)))"
        }
    }

    /// Maps an errno value from `operation` to the typed error a caller can act on.
    static func from(errno code: Int32, operation: String, connecting: Bool = false) -> NetError {
        switch code {
        case ECONNREFUSED: return .connectionRefused
        case EHOSTUNREACH: return .hostUnreachable
        case ENETUNREACH: return .networkUnreachable
        case ETIMEDOUT: return .timedOut(connecting ? .connect : .transport)
        case ECONNRESET, EPIPE: return .connectionReset
        case EADDRINUSE: return .addressInUse
        case EADDRNOTAVAIL: return .addressNotAvailable
        default: return .system(errno: code, operation: operation)
        }
    }
}
