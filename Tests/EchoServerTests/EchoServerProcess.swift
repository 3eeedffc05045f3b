import Glibc
import RunLoopTesting

/// A real `echo-server` process, started from the binary SwiftPM built next to the test bundle, with
/// its stdout read for the port and its stderr (the log) kept in a file. Killed if still running when
/// released.
final class EchoServerProcess {
    let pid: pid_t
    let port: UInt16
    private let logPath: String
    private var exitStatus: Int32?

    enum Failure: Error, CustomStringConvertible {
        case spawn(Int32)
        case noPort(String)
        var description: String {
            switch self {
            case .spawn(let code): return "posix_spawn failed: \(String(cString: strerror(code)))"
            case .noPort(let output): return "echo-server printed no port: \(output)"
            }
        }
    }

    /// Starts `echo-server --port 0 <arguments>`, under `ulimit -n <limit>` if given, and waits for
    /// the line that names its port.
    init(_ arguments: [String], descriptorLimit: Int? = nil) throws {
        logPath = "/tmp/echo-server-test-\(getpid())-\(UInt64.random(in: 0..<UInt64.max)).log"
        var command = [builtProductPath("echo-server"), "--port", "0"] + arguments
        if let descriptorLimit {
            // sh sets both limits, so the daemon cannot raise the soft one past it.
            command = ["/bin/sh", "-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\""] + command
        }
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw Failure.spawn(errno) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        posix_spawn_file_actions_addopen(&actions, 2, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Tests run in parallel: descriptors other tests opened without close-on-exec (their pipes,
        // their sockets' peers) must not live on in this daemon, or their peers never see end of file.
        closeInheritedDescriptors(from: 3, in: &actions)
        // The test thread's signal mask and dispositions must not leak into the daemon: a blocked
        // SIGTERM would never reach it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signo in [SIGTERM, SIGINT, SIGPIPE] { sigaddset(&defaults, signo) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let argv = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let status = posix_spawn(&child, command[0], &actions, &attributes, argv, environ)
        close(pipeFDs[1])
        guard status == 0 else {
            close(pipeFDs[0])
            throw Failure.spawn(status)
        }
        pid = child
        // "echo-server listening on 127.0.0.1:41234"
        var output = [UInt8]()
        var byte: UInt8 = 0
        while read(pipeFDs[0], &byte, 1) == 1, byte != UInt8(ascii: "\n") { output.append(byte) }
        close(pipeFDs[0])
        let line = String(decoding: output, as: UTF8.self)
        guard let portText = line.split(separator: ":").last, let port = UInt16(portText) else {
            kill(child, SIGKILL)
            var ignored: Int32 = 0
            waitpid(child, &ignored, 0)
            throw Failure.noPort(line)
        }
        self.port = port
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var ignored: Int32 = 0
            waitpid(pid, &ignored, 0)
        }
        unlink(logPath)
    }

    func signal(_ signo: Int32) { kill(pid, signo) }

    /// Waits for the process to exit; its exit code (or 128 + the signal that killed it). A process
    /// still running after `milliseconds` is killed (the code is then 128 + SIGKILL), so a test that
    /// fails cannot hang.
    @discardableResult
    func waitForExit(milliseconds: Int = 60_000) -> Int32 {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        let end = monotonicMilliseconds() + milliseconds
        while waitpid(pid, &status, WNOHANG) == 0 {
            if monotonicMilliseconds() > end {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(5000)
        }
        let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        exitStatus = code
        return code
    }

    /// Everything logged so far.
    var log: String {
        guard let file = fopen(logPath, "r") else { return "" }
        defer { fclose(file) }
        var text = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            text.append(contentsOf: buffer[..<count])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The log lines containing `text`.
    func logLines(containing text: String) -> [String] {
        log.split(separator: "\n").map(String.init).filter { $0.contains(text) }
    }
}
