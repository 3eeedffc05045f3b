import Foundation
import Glibc

/// A throw-away Redis server for one test (or the cluster demo): `redis-server` in a temporary directory, reachable
/// through the unix socket there (and a free TCP port of 127.0.0.1 only when asked: tests never collide,
/// and a system Redis on 6379 does not matter), with no persistence and `DEBUG` enabled (tests make it sleep). It starts
/// in milliseconds. Killed and deleted when released.
///
/// Without `redis-server` installed, ``start()`` throws ``Failure/notInstalled`` with a message that
/// says to run `Scripts/setup.sh --tests`: a test that needs a server fails, it is never skipped.
///
/// `@unchecked Sendable`: immutable but for its process, which only ``kill()`` and ``restart()``
/// change; a test calls them from one thread at a time.
public final class RedisServer: @unchecked Sendable {
    public enum Failure: Error, CustomStringConvertible {
        case notInstalled
        case didNotStart(String)

        public var description: String {
            switch self {
            case .notInstalled: return "redis-server is not installed (not on PATH): run Scripts/setup.sh --tests"
            case .didNotStart(let log): return "redis-server did not start: \(log)"
            }
        }
    }

    /// The server's unix socket: what a connection's host is.
    public let socketPath: String
    /// The TCP port it also listens on at 127.0.0.1, when started with `tcp` (else 0: none). For a
    /// client that must reach it through a relay, which speaks TCP.
    public let tcpPort: UInt16
    /// The server's log, for a failing test to print.
    public var log: String { (try? String(contentsOfFile: directory + "/redis.log", encoding: .utf8)) ?? "" }

    private let directory: String
    private let executable: String
    private var process: Process?

    private init(directory: String, executable: String, tcpPort: UInt16) {
        self.directory = directory
        self.executable = executable
        self.tcpPort = tcpPort
        socketPath = directory + "/redis.sock"
    }

    /// Starts a server in a new temporary directory and blocks until it accepts connections.
    public static func start() throws -> RedisServer {
        try start(tcp: false)
    }

    /// ``start()``, listening on a free TCP port of 127.0.0.1 too (``tcpPort``) if `tcp`.
    public static func start(tcp: Bool) throws -> RedisServer {
        guard let executable = installedServer() else { throw Failure.notInstalled }
        let directory = temporaryPath("redis")
        guard mkdir(directory, 0o700) == 0 else { throw Failure.didNotStart("mkdir \(directory): \(String(cString: strerror(errno)))") }
        let server = RedisServer(directory: directory, executable: executable, tcpPort: tcp ? try freeTCPPort() : 0)
        try server.launch()
        return server
    }

    /// SIGKILL: no goodbye, no flush; its connections see the end of their streams.
    public func kill() {
        guard let process, process.exitIfEnded() == nil else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        _ = try? process.waitForExit()
        self.process = nil
    }

    /// Kills the server if it runs and starts a new one on the same socket (empty: nothing is saved).
    public func restart() throws {
        kill()
        try launch()
    }

    /// Runs one command through `redis-cli` (installed with `redis-server`) on a connection of its
    /// own and waits for its answer: for faults the server must cause itself (`CLIENT KILL`,
    /// `DEBUG SLEEP`). Blocks the calling thread for as long as the command takes.
    public func command(_ arguments: [String]) throws -> CommandResult {
        let client = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("redis-cli").path
        return try runCommand([client, "-s", socketPath] + arguments)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func launch() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "--port", "\(tcpPort)", "--bind", "127.0.0.1", "--unixsocket", socketPath, "--unixsocketperm", "700", "--dir", directory,
            "--logfile", directory + "/redis.log", "--save", "", "--appendonly", "no", "--daemonize", "no",
            "--enable-debug-command", "yes"
        ]
        try process.runWithNoSignalBlocked()
        self.process = process
        // Redis removes a stale socket file before it binds, so a connect that works is this server's.
        let deadline = ContinuousClock.now + .seconds(10)
        while !acceptsConnections() {
            guard process.exitIfEnded() == nil, ContinuousClock.now < deadline else {
                kill()
                throw Failure.didNotStart(log)
            }
            usleep(2_000)
        }
    }

    private func acceptsConnections() -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            let bytes = Array(socketPath.utf8.prefix(path.count - 1))
            path.copyBytes(from: bytes)
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
    }

    /// A port of 127.0.0.1 the kernel just handed out and nobody holds (it hands out the others first).
    private static func freeTCPPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure.didNotStart("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure.didNotStart("bind: \(String(cString: strerror(errno)))") }
        return UInt16(bigEndian: address.sin_port)
    }

    private static func installedServer() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return (path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin"])
            .map { $0 + "/redis-server" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
