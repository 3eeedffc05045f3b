import ChatNodeKit
import Foundation
import Glibc
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing

/// Foundation has a RunLoop too; these tests mean RunLoopKit's.
private typealias RunLoop = RunLoopKit.RunLoop

/// A network namespace of the test's own with only `lo`, up: no default route, no other link.
/// Needs root and iproute2; ``unavailableReason`` says why not. Named `rlk-<pid>-…` like the
/// RunLoopIMTests fixtures, whose stale-namespace sweep then also removes one a crashed run left.
private final class LoopbackNamespace: Sendable {
    static let ipPath: String? = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { (path: String) in access(path, X_OK) == 0 }
    static var unavailableReason: String? {
        if ipPath == nil { return "no `ip` command (install Debian's iproute2)" }
        if geteuid() != 0 { return "not root" }
        return nil
    }

    let name = "rlk-\(getpid())-tc\(UInt32.random(in: 0...UInt32.max))-lo"

    init() throws {
        try Self.ip("netns", "add", name)
        do {
            try Self.ip("-n", name, "link", "set", "lo", "up")
        } catch {
            delete()
            throw error
        }
    }

    func delete() { try? Self.ip("netns", "delete", name) }

    /// Moves the calling thread (only it: Linux keeps the network namespace per thread) into it.
    func enter() throws {
        struct SetnsFailed: Error, CustomStringConvertible { let description: String }
        let fd = open("/var/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SetnsFailed(description: "open \(name): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // Glibc's Swift module does not import setns (it is behind _GNU_SOURCE); the C library has it.
        typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(nil, "setns") else { throw SetnsFailed(description: "no setns in libc") }
        guard unsafeBitCast(symbol, to: SetNamespace.self)(fd, 0x4000_0000 /* CLONE_NEWNET */) == 0 else {
            throw SetnsFailed(description: "setns: \(String(cString: strerror(errno)))")
        }
    }

    private static func ip(_ arguments: String...) throws {
        struct CommandFailed: Error, CustomStringConvertible { let description: String }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ipPath ?? "/usr/sbin/ip")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        try process.runWithNoSignalBlocked()
        guard try process.waitForExit() == .exited(0) else {
            let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw CommandFailed(description: "ip \(arguments.joined(separator: " ")): \(stderr)")
        }
    }
}

@Suite(
    "Terminal client in a network namespace",
    .enabled(
        if: LoopbackNamespace.unavailableReason == nil,
        Comment(rawValue: "needs root and iproute2: \(LoopbackNamespace.unavailableReason ?? "")")))
struct TerminalClientNamespaceTests {
    @Test("`--host localhost` with loopback only and no default route: connects, delivers, never 'offline — network down'")
    func localhostWithoutDefaultRoute() async throws {
        let namespace = try LoopbackNamespace()
        defer { namespace.delete() }
        let (lines, status) = try await onLoopThread { () throws -> ([String], Int32?) in
            try namespace.enter()
            let loop = RunLoop.current
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            let node = try ChatNode(configuration: nodeConfiguration(path))
            try node.start()
            defer { node.stop() }
            let seen = Transcript()
            var configuration = TerminalClient.Configuration(user: "alice", password: "pw")
            configuration.host = "localhost"
            configuration.port = node.port
            configuration.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(300))
            configuration.drainTimeout = .seconds(5)
            let connector = TCPFrameLink.connector(host: configuration.host, port: configuration.port)
            let alice = TerminalClient(configuration: configuration, connector: connector) { seen.lines.append($0) }
            type("/join lobby", "hello from localhost", into: alice)
            alice.start()
            alice.endOfInput()
            try spin(loop, for: .seconds(20)) { alice.exitStatus != nil }
            return (seen.lines, alice.exitStatus)
        }
        #expect(lines.first?.hasPrefix("* connecting to localhost:") == true, "\(lines)")
        #expect(lines.contains("* connected"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("→ m1 stored (seq ") }, "\(lines)")
        #expect(!lines.contains { $0.contains("offline") }, "\(lines)")
        #expect(status == 0, "\(lines)")
    }
}
