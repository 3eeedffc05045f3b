import ArgumentParser
import ChatNodeKit
import Glibc

/// Every setting `serve` and `check-config` take on the command line, over the config file
/// (`--config`) and the environment (``ResolvedSettings``). Values are taken as text and read by
/// the settings' own keys (``NodeSettingKey``), so a flag, a variable and a file line are held to
/// one rule; each flag's name is its key's.
struct ServeOptions: ParsableArguments {
    @Option(help: "TOML config file (also CHAT_NODE_CONFIG); the environment overrides it, flags override both.")
    var config: String?

    @Option(help: "Address to listen on (an IPv4 or IPv6 literal; default 127.0.0.1).")
    var host: String?

    @Option(help: "Port; 0 lets the system choose (default 7100). Printed on stdout as 'listening on HOST:PORT'.")
    var port: String?

    @Option(help: "HTTP port for the browser page (/) and its WebSocket (/ws); 0 lets the system choose (default 7101). Printed as 'page: URL'.")
    var httpPort: String?

    @Flag(help: "Serve no browser page and no WebSocket, only IM over TCP (http = false).")
    var noHttp = false

    @Option(help: "Seconds between the node's pings to each WebSocket client (default 20).")
    var websocketPingSeconds: String?

    @OptionGroup var storage: StorageOptions

    @OptionGroup var tls: ServerTLSOptions

    @Option(
        help: ArgumentHelp(
            "Redis of a cluster of nodes: redis://IP[:PORT] or unix:///PATH (also CHAT_NODE_REDIS).",
            discussion:
                "Needs --postgres: every node on the same database and Redis delivers the others' messages live and shares presence and the sessions-per-user limit."
        ))
    var redis: String?

    @Option(help: "This node's name in its cluster, unique among the live nodes (default: HOST-PID-RANDOM).")
    var nodeId: String?

    @Option(
        help: ArgumentHelp(
            "Seconds a cluster node's lease in Redis lasts without a refresh (default 10).",
            discussion:
                "A dead node's users go offline on the other nodes about this long after it died; it is refreshed every third of it. Shorter for demos and tests, never shorter than Redis's worst pause."
        ))
    var leaseSeconds: String?

    @Flag(inversion: .prefixedNo, help: "Create an account at the first login of an unknown name (default: on).")
    var registration: Bool?

    @Option(help: "Most connections at once (default 1024).")
    var maxConnections: String?

    @Option(help: "Most sessions per user (default 4).")
    var maxSessionsPerUser: String?

    @Option(help: "Messages per second one connection may send on average (default 50).")
    var messagesPerSecond: String?

    @Option(help: "Rooms one user may be a member of (JOIN beyond it: tooManyRooms); 0 for no limit (default 100).")
    var maxRoomsPerUser: String?

    @Option(
        help: ArgumentHelp(
            "Members past which a room is large (default 1000).",
            discussion:
                "A large room sends no join and leave notices and no presence of its members; clients are told the size at login and show its members' presence as unknown."
        ))
    var largeRoomMembers: String?

    @Option(help: "Largest frame body accepted, in bytes (default 65536).")
    var maxFrameBytes: String?

    @Option(help: "Seconds a client has to log in after connecting (default 10).")
    var loginSeconds: String?

    @Option(help: "scrypt cost (log2 of N) for new password hashes, 4...20 (default 14).")
    var scryptCost: String?

    @Option(help: "Delete messages older than this many days once everyone they were for has acknowledged them (default: keep all).")
    var keepDays: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical (default info).")
    var logLevel: String?

    @Option(help: "Log format: text, or json (one object per line: time, level, label, message, metadata).")
    var logFormat: String?

    /// The config file's path: the flag, else `CHAT_NODE_CONFIG`; none by default.
    var configPath: String? { config ?? environment("CHAT_NODE_CONFIG") }

    /// What the command line set, by key name.
    var flagValues: [String: ConfigValue] {
        let texts: [String: String?] = [
            "host": host, "port": port, "http-port": httpPort, "websocket-ping-seconds": websocketPingSeconds,
            "database": storage.database, "postgres": storage.postgres, "redis": redis, "node-id": nodeId, "lease-seconds": leaseSeconds,
            "max-connections": maxConnections, "max-sessions-per-user": maxSessionsPerUser, "messages-per-second": messagesPerSecond,
            "max-rooms-per-user": maxRoomsPerUser, "large-room-members": largeRoomMembers, "max-frame-bytes": maxFrameBytes,
            "login-seconds": loginSeconds, "scrypt-cost": scryptCost,
            "keep-days": keepDays,
            "log-level": logLevel, "log-format": logFormat, "tls-cert": tls.tlsCert, "tls-key": tls.tlsKey
        ]
        var values = texts.compactMapValues { $0.map(ConfigValue.unparsed) }
        if noHttp { values["http"] = .boolean(false) }
        if let registration { values["registration"] = .boolean(registration) }
        return values
    }

    /// The file (read now), the process's environment and the flags, layered.
    /// - Throws: every problem in any of them (``ConfigErrors``).
    func resolve() throws(ConfigErrors) -> ResolvedSettings {
        let file = try configPath.map { path throws(ConfigErrors) in try ConfigFile(contentsOf: path) }
        return try ResolvedSettings.resolve(file: file, environment: processEnvironment(), flags: flagValues)
    }
}

/// Settings that cannot be used: sysexits' EX_CONFIG, for `serve` and `check-config` alike.
/// Usage errors (an unknown flag) stay ArgumentParser's EX_USAGE (64).
let configurationErrorExit = ExitCode(78)

/// Every `NAME=value` of the process's environment.
func processEnvironment() -> [String: String] {
    var variables: [String: String] = [:]
    var entry = environ
    while let pointer = entry.pointee {
        let text = String(cString: pointer)
        if let equals = text.firstIndex(of: "=") { variables[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
        entry += 1
    }
    return variables
}
