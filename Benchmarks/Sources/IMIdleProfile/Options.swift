/// `im-idle [both|server|clients] [--count N] [--seconds S] [--port P] [--heartbeat S] [--batch N] [--scrypt-cost C]`
struct Options {
    enum Role: String { case both, server, clients }

    var role = Role.both
    /// Client connections.
    var count = 10_000
    /// The measurement window, once every client is online.
    var seconds = 20
    /// The server's port (0: the system picks; `clients` needs the server's).
    var port: UInt16 = 0
    /// Each client's fixed heartbeat interval (announced as its keepalive: the server drops a client
    /// silent for 1.5 times this).
    var heartbeat: Duration = .seconds(2)
    /// How long a heartbeat may wait for its answer.
    var answerTimeout: Duration = .seconds(5)
    /// Connections being set up at once while ramping up.
    var batch = 200
    /// All clients must be online within this, or the run fails.
    var readyTimeout: Duration = .seconds(600)
    /// With a cost (log2 of scrypt's N), the server is the chat node's: `ChatService` (presence to
    /// contacts) and one scrypt check per login off the loop, as `chat-node serve --scrypt-cost C`
    /// (issue 22's login benchmark, Scripts/im-logins.sh). 0: logins are free, no application.
    var scryptCost = 0

    static let usage = """
        usage: im-idle [both|server|clients] [--count N] [--seconds S] [--port P] [--heartbeat SECONDS] [--batch N] [--scrypt-cost C]
          both     server and clients in this process, on two threads (default)
          server   the server alone: prints "port P", measures once N clients are online
          clients  N clients of the server at 127.0.0.1:P (--port required)
        """

    init(_ arguments: [String]) throws(UsageError) {
        var rest = arguments[...]
        if let first = rest.first, let role = Role(rawValue: first) {
            self.role = role
            rest = rest.dropFirst()
        }
        while let flag = rest.popFirst() {
            guard let text = rest.popFirst(), let value = Int(text), value >= 0 else { throw UsageError(flag) }
            switch flag {
            case "--count": count = max(1, value)
            case "--seconds": seconds = value
            case "--port": port = UInt16(clamping: value)
            case "--heartbeat": heartbeat = .seconds(max(1, value))
            case "--batch": batch = max(1, value)
            case "--scrypt-cost": scryptCost = min(20, value)
            default: throw UsageError(flag)
            }
        }
        if role == .clients, port == 0 { throw UsageError("--port") }
    }
}

struct UsageError: Error {
    let flag: String
    init(_ flag: String) { self.flag = flag }
}
