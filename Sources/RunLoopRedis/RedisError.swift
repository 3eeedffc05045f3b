/// Why a command or a connection failed. Every command completes exactly once: with its reply, or
/// with one of these.
public enum RedisError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The connection could not be made: nothing listens there, the address is not numeric, the
    /// socket could not be watched. Carries hiredis's message (`Connection refused`, `No such file or
    /// directory`, …) or ours.
    case connectionFailed(String)
    /// The server answered the command with an error reply (`WRONGTYPE …`, `ERR unknown command …`).
    /// Only that command fails; the connection carries on.
    case server(String)
    /// The connection ended before the command's reply arrived: the server closed it (killed,
    /// restarted, `CLIENT KILL`) or the socket failed. Carries hiredis's message. A command that was
    /// sent may have run.
    case connectionLost(String)
    /// A deadline on the loop's clock passed: connecting took longer than the connect timeout, or the
    /// command's reply took longer than its timeout. A timed-out command may still run on the server.
    case timedOut(RedisTimeout)
    /// ``RedisConnection/close()`` ended the connection, or the command came before
    /// ``RedisConnection/connect()``.
    case closed
    /// A command this client does not carry: an empty one, or one that turns the connection into a
    /// stream of pushes (`SUBSCRIBE`, `PSUBSCRIBE`, `MONITOR`), where one command no longer has one
    /// reply. Streams (`XREAD BLOCK`) are the way to wait for data.
    case protocolMisuse(String)

    public var description: String {
        switch self {
        case .connectionFailed(let message): return "connection failed: \(message)"
        case .server(let message): return "server error: \(message)"
        case .connectionLost(let message): return "connection lost: \(message)"
        case .timedOut(let timeout): return "timed out (\(timeout))"
        case .closed: return "connection closed"
        case .protocolMisuse(let message): return "protocol misuse: \(message)"
        }
    }
}

/// Which deadline passed.
public enum RedisTimeout: Sendable, Equatable {
    /// ``RedisConfiguration/connectTimeout``.
    case connect
    /// The command's timeout (``RedisConfiguration/commandTimeout`` unless the send gave its own).
    case command
}
