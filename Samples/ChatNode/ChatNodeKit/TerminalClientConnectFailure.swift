import RunLoopIMCore
import RunLoopKit

/// The line for an attempt that never reached the node, in a person's words: where it tried, why it
/// failed, what is likely wrong, and when it tries again. Pure.
///
/// `* cannot connect to 127.0.0.1:27999: connection refused (is the node running?) — retrying in 0.5 s`;
/// from the second attempt on, ` (attempt N)` follows.
enum TerminalConnectFailure {
    static func line(node: String, reason: IMDisconnectReason?, retryIn delay: Duration, attempt: Int) -> String {
        let retry = "retrying in \(formatDuration(delay, tenths: true))\(attempt > 1 ? " (attempt \(attempt))" : "")"
        return "* cannot connect to \(node): \(reason.map(cause) ?? "no connection") — \(retry)"
    }

    /// The cause, with a hint where the cause suggests one: a refusal means nothing listens on the
    /// port, no route means the address or the network is wrong.
    static func cause(_ reason: IMDisconnectReason) -> String {
        switch reason {
        case .transport(.failed(.refused)): return "connection refused (is the node running?)"
        case .transport(.failed(.unreachable)): return "host unreachable (is the address right? is the network up?)"
        case .transport(.failed(.timedOut)): return "timed out (is the address right? does a firewall drop it?)"
        case .transport(.failed(let failure)): return "\(failure)"
        case .loginTimeout: return "no answer to the login in time (is it a chat node?)"
        default: return "\(reason)"
        }
    }
}
