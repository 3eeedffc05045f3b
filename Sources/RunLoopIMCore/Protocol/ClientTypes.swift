public import RunLoopKit

/// Where an ``IMClient``'s connection is. Reported through ``IMClient/onStateChange``.
public enum IMConnectionState: Equatable, Sendable, CustomStringConvertible {
    /// Not started.
    case idle
    /// Opening a connection; `attempt` counts attempts since the last successful login.
    case connecting(attempt: Int)
    /// Connected, LOGIN sent, waiting for the answer.
    case loggingIn
    /// Logged in: messages flow.
    case online
    /// Dropped; the next attempt starts `delay` after the drop.
    case reconnecting(in: Duration, attempt: Int)
    /// The network has no route to the server; no attempt is made until it returns.
    case waitingForNetwork(String)
    /// ``IMClient/close()`` is settling unacknowledged messages with the server before logging out.
    case closing
    /// For good: no reconnect follows.
    case closed(IMClosedReason)

    public var description: String {
        switch self {
        case .idle: return "idle"
        case .connecting(let attempt): return attempt <= 1 ? "connecting" : "connecting (attempt \(attempt))"
        case .loggingIn: return "logging in"
        case .online: return "connected"
        case .reconnecting(let delay, let attempt):
            return "reconnecting in \(formatSeconds(delay)) (attempt \(attempt))"
        case .waitingForNetwork(let why): return "offline — network down (\(why))"
        case .closing: return "closing"
        case .closed(let reason): return "closed: \(reason)"
        }
    }
}

/// Why a client stopped for good.
public enum IMClosedReason: Equatable, Sendable, CustomStringConvertible {
    /// ``IMClient/close()``.
    case userClosed
    /// The server refused the login; retrying would not help.
    case loginRefused(IMStatusCode, String)
    /// The backoff policy's attempts ran out; the last drop's reason.
    case gaveUp(attempts: Int, last: IMDisconnectReason)
    /// The connection failed in a way a retry would repeat (``IMLinkFailure/isFinal``): the server's
    /// TLS certificate was refused (the failure names the check), or one side spoke TLS to a port
    /// that does not.
    case secureConnectionFailed(IMLinkFailure)

    public var description: String {
        switch self {
        case .userClosed: return "closed by the user"
        case .loginRefused(let code, let text): return "login refused (\(code))\(text.isEmpty ? "" : ": \(text)")"
        case .gaveUp(let attempts, let last): return "gave up after \(attempts) attempts (last: \(last))"
        case .secureConnectionFailed(let failure): return "no secure connection: \(failure)"
        }
    }
}

/// Why a connection ended (or an attempt failed). Exactly one per connection.
public enum IMDisconnectReason: Error, Equatable, Sendable, CustomStringConvertible {
    /// Something that expects an answer (a heartbeat, a message, the login) got none within the
    /// answer timeout: the ping-pong verdict "the peer is gone", whatever TCP thinks.
    case answerTimeout(Duration)
    /// The transport closed or failed (refused, reset, peer closed, …).
    case transport(IMLinkCloseReason)
    /// Connecting and logging in took longer than the login timeout.
    case loginTimeout
    /// The server refused the login.
    case loginRefused(IMStatusCode, String)
    /// The server sent something this client cannot read.
    case protocolError(IMFrameError)
    /// The server said why it is closing (an ERROR frame).
    case serverError(IMStatusCode, String)
    /// The network lost its route to the server.
    case networkUnreachable(String)
    /// ``IMClient/close()``.
    case userClosed

    /// A login refusal that ends the client for good (a wrong password, …), as opposed to one for
    /// now (the server is busy, the user has too many sessions, …), which is retried with backoff.
    public var isFinalRefusal: Bool {
        guard case .loginRefused(let code, _) = self else { return false }
        return !IMClientMachine.isTemporaryLoginRefusal(code)
    }

    public var description: String {
        switch self {
        case .answerTimeout(let waited): return "no answer for \(formatSeconds(waited)) (ping-pong timeout)"
        case .transport(let reason): return "connection \(reason)"
        case .loginTimeout: return "login timed out"
        case .loginRefused(let code, let text): return "login refused (\(code))\(text.isEmpty ? "" : ": \(text)")"
        case .protocolError(let error): return "protocol error: \(error)"
        case .serverError(let code, let text):
            return "server error (\(code))\(text.isEmpty || text == code.description ? "" : ": \(text)")"
        case .networkUnreachable(let why): return "network unreachable (\(why))"
        case .userClosed: return "closed by the user"
        }
    }
}

package func formatSeconds(_ duration: Duration) -> String {
    let seconds = duration.secondsDouble
    if seconds >= 10 { return "\(Int(seconds.rounded())) s" }
    let tenths = (seconds * 10).rounded() / 10
    return "\(tenths) s"
}
