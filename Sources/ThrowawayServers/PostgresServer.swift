import Foundation
import Glibc
import RunLoopKit

/// A throw-away PostgreSQL server for one test (or the cluster demo): its own data directory in a temporary directory,
/// reachable only through a unix socket there (no TCP port, so tests never collide), tuned for speed
/// over durability (`fsync`, `synchronous_commit` and `full_page_writes` off). Stopped and deleted
/// when released.
///
/// `initdb` is slow (seconds), so it runs once per test process into a template directory (deleted
/// at exit); each server starts from a copy of it. PostgreSQL refuses to run as root: when the tests
/// are root, the server's files belong to the `postgres` user Debian's package creates, and its
/// programs run through `runuser -u postgres`.
///
/// Without PostgreSQL installed, ``start()`` throws ``Failure/notInstalled`` with a message that says
/// to run `Scripts/setup.sh --tests`: a test that needs a server fails, it is never skipped.
///
/// `@unchecked Sendable`: immutable but for whether the server runs (and was killed), which only
/// ``kill()``, ``restart()`` and ``stop()`` change; a test calls them from one thread at a time.
public final class PostgresServer: @unchecked Sendable {
    public enum Failure: Error, CustomStringConvertible {
        case notInstalled
        case commandFailed(String, output: String)

        public var description: String {
            switch self {
            case .notInstalled:
                return "PostgreSQL is not installed (no /usr/lib/postgresql/<version>/bin/pg_ctl): run Scripts/setup.sh --tests"
            case .commandFailed(let command, let output): return "\(command) failed: \(output)"
            }
        }
    }

    /// The directory of the server's unix socket: libpq's `host` for it.
    public let socketDirectory: String
    /// The socket's port number (its file is `.s.PGSQL.<port>`).
    public let port: UInt16 = 5432
    /// The superuser, who may log in without a password over the socket.
    public let user = "postgres"
    /// The database that always exists.
    public let database = "postgres"
    /// The superuser over the socket as a libpq URI (what `chat-node --postgres` takes).
    public var url: String { "postgresql://\(user)@/\(database)?host=\(socketDirectory)" }
    /// The server's log, for a failing test to print.
    public var log: String { (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "" }

    private let directory: String
    private let tools: PostgresTools
    private var isRunning = false
    /// Killed and not started since: the dynamic shared memory it left is cleaned by a start.
    private var wasKilled = false

    private init(directory: String, tools: PostgresTools) {
        self.directory = directory
        self.socketDirectory = directory
        self.tools = tools
    }

    /// Copies the template data directory into a new temporary directory and starts a server on it,
    /// on a thread of its own (the first call in a process also runs `initdb`, for seconds: Swift
    /// concurrency's few threads must not wait for it). Returns once the server accepts connections.
    public static func start() async throws -> PostgresServer {
        try await withCheckedThrowingContinuation { continuation in
            JoinableThread.detach { continuation.resume(with: Result { try startBlocking() }) }
        }
    }

    /// ``start()`` on the calling thread, which it blocks.
    public static func startBlocking() throws -> PostgresServer {
        let tools = try PostgresTools.installed()
        let template = try PostgresTemplate.shared.get()
        let directory = try makeTemporaryDirectory("pg")
        let server = PostgresServer(directory: directory, tools: tools)
        try tools.run("/bin/cp", ["-a", template + "/data", directory + "/data"])
        try tools.giveToServerUser(directory)
        try server.startServer()
        return server
    }

    /// SIGKILL to the postmaster and its backends, at once: connections reset, nothing is flushed,
    /// like a crashed machine. ``restart()`` brings it back (with crash recovery).
    public func kill() {
        guard isRunning else { return }
        isRunning = false
        wasKilled = true
        guard let postmaster = postmasterPID() else { return }
        let processes = [postmaster] + childProcesses(of: postmaster)
        for pid in processes { Glibc.kill(pid, SIGKILL) }
        for pid in processes { waitUntilGone(pid) }
        // A killed postmaster may linger as a zombie nobody reaps, whose pid still looks alive to the
        // next one checking the lock files: they are stale, so they go.
        for lock in ["/data/postmaster.pid", "/.s.PGSQL.\(port).lock"] { unlink(directory + lock) }
    }

    /// Starts the server again: after ``kill()`` or ``stop()`` it starts; while it runs, it stops it
    /// (fast: sessions are ended) and starts it.
    public func restart() throws {
        if isRunning { stop(mode: "fast") }
        try startServer()
    }

    /// Stops the server (`pg_ctl stop -m immediate`: no shutdown checkpoint, backends end at once).
    public func stop() { stop(mode: "immediate") }

    deinit {
        if wasKilled { try? startServer() }
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func startServer() throws {
        let options = "-c unix_socket_directories='\(directory)' -c port=\(port)"
        do {
            try tools.run(
                tools.binary("pg_ctl"), ["-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "60", "-s", "-o", options, "start"],
                asServerUser: true)
        } catch PostgresServer.Failure.commandFailed(let command, let output) {
            throw PostgresServer.Failure.commandFailed(command, output: output + "server log:\n" + log)
        }
        isRunning = true
        wasKilled = false
    }

    private func stop(mode: String) {
        guard isRunning else { return }
        isRunning = false
        try? tools.run(tools.binary("pg_ctl"), ["-D", directory + "/data", "-w", "-s", "-m", mode, "stop"], asServerUser: true)
    }

    private func postmasterPID() -> pid_t? {
        guard let text = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8),
            let first = text.split(separator: "\n").first
        else { return nil }
        return pid_t(first)
    }
}

/// The server programs of the newest PostgreSQL under /usr/lib/postgresql, and how to run them.
struct PostgresTools {
    let binaries: String
    /// The `postgres` user's ids, when this process is root and must run the server as someone else.
    let serverUser: (uid: uid_t, gid: gid_t)?

    static func installed() throws -> PostgresTools {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let newest = versions.compactMap(Int.init).sorted().last { FileManager.default.isExecutableFile(atPath: "\(root)/\($0)/bin/pg_ctl") }
        guard let newest else { throw PostgresServer.Failure.notInstalled }
        var serverUser: (uid_t, gid_t)?
        if getuid() == 0 {
            guard let entry = getpwnam("postgres") else { throw PostgresServer.Failure.notInstalled }
            serverUser = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
        return PostgresTools(binaries: "\(root)/\(newest)/bin", serverUser: serverUser)
    }

    func binary(_ name: String) -> String { "\(binaries)/\(name)" }

    /// Makes `directory` (recursively) the server user's, when there is one.
    func giveToServerUser(_ directory: String) throws {
        guard let serverUser else { return }
        try run("/bin/chown", ["-R", "\(serverUser.uid):\(serverUser.gid)", directory])
    }

    /// Runs `program` to its end (``runCommand(_:)``: no Foundation process, no run loop spun), as the
    /// server user if asked and there is one; throws with its output when it fails.
    func run(_ program: String, _ arguments: [String], asServerUser: Bool = false) throws {
        let command = asServerUser && serverUser != nil ? ["/usr/sbin/runuser", "-u", "postgres", "--", program] + arguments : [program] + arguments
        let result = try runCommand(command)
        guard result.status == 0 else {
            throw PostgresServer.Failure.commandFailed(command.joined(separator: " "), output: result.output + result.errorOutput)
        }
    }
}

/// The data directory `initdb` made once for this test process; servers start from copies of it.
enum PostgresTemplate {
    static let shared: Result<String, any Error> = Result {
        let tools = try PostgresTools.installed()
        let directory = templateDirectory
        try tools.giveToServerUser(directory)
        try tools.run(
            tools.binary("initdb"),
            [
                "-D", directory + "/data", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-locale", "--no-sync",
                // 1 MB WAL segments instead of 16: less to copy for every server.
                "--wal-segsize=1"
            ],
            asServerUser: true)
        // Test speed over durability, a socket only, and little shared memory for many servers at once.
        let settings = """

            listen_addresses = ''
            fsync = off
            synchronous_commit = off
            full_page_writes = off
            shared_buffers = 16MB
            max_connections = 20
            """
        let configuration = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/postgresql.conf"))
        defer { try? configuration.close() }
        try configuration.seekToEnd()
        try configuration.write(contentsOf: Data(settings.utf8))
        atexit { try? FileManager.default.removeItem(atPath: templateDirectory) }
        return directory
    }
}

/// Made at first use, deleted at exit (a global, so the exit handler can name it without a capture).
private let templateDirectory: String = (try? makeTemporaryDirectory("pg-template")) ?? temporaryPath("pg-template")

private func makeTemporaryDirectory(_ name: String) throws -> String {
    let directory = temporaryPath(name)
    guard mkdir(directory, 0o700) == 0 else {
        throw PostgresServer.Failure.commandFailed("mkdir \(directory)", output: String(cString: strerror(errno)))
    }
    return directory
}

/// The processes whose parent is `pid` (the postmaster's backends and helpers).
private func childProcesses(of pid: pid_t) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry in
        guard let child = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": the state, then the parent's pid.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        return fields.count > 1 && pid_t(fields[1]) == pid ? child : nil
    }
}

/// Waits (up to 10 s) until `pid` is gone or a zombie: its sockets are closed either way.
private func waitUntilGone(_ pid: pid_t) {
    for _ in 0..<1000 {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let end = stat.lastIndex(of: ")") else { return }
        if stat[stat.index(after: end)...].dropFirst().first == "Z" { return }
        usleep(10_000)
    }
}
