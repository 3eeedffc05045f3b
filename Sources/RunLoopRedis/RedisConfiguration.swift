/// Where and how a ``RedisConnection`` connects.
///
/// `host` is the path of a unix socket (it starts with `/`) or a numeric IP address. Names are not
/// resolved: hiredis resolves with a blocking `getaddrinfo`, which must not run on the loop. Resolve
/// a name off the loop first (RunLoopNet's `HostResolver`) and connect to one of its addresses.
public struct RedisConfiguration: Sendable {
    public var host: String
    /// The TCP port; ignored for a unix socket.
    public var port: UInt16
    /// How long connecting may take, on the loop's clock; `nil`: no limit. 10 seconds by default.
    public var connectTimeout: Duration?
    /// How long a command may wait for its reply, on the loop's clock, unless the send names its own
    /// timeout; `nil` (the default): no limit. Redis answers in order, so a command waits for those
    /// sent before it: give a blocking command (`XREAD BLOCK`) a timeout longer than its block.
    public var commandTimeout: Duration?

    public init(host: String, port: UInt16 = 6379, connectTimeout: Duration? = .seconds(10), commandTimeout: Duration? = nil) {
        self.host = host
        self.port = port
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
    }

    /// A connection over the unix socket at `path`.
    public static func unixSocket(_ path: String, connectTimeout: Duration? = .seconds(10), commandTimeout: Duration? = nil) -> Self {
        Self(host: path, connectTimeout: connectTimeout, commandTimeout: commandTimeout)
    }

    /// Whether `host` is a unix socket's path.
    var isUnixSocket: Bool { host.hasPrefix("/") }
}
