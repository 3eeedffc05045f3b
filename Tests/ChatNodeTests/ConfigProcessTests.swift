import ChatNodeKit
import Foundation
import Glibc
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing

/// `chat-node check-config` and `chat-node serve --config` as processes: the shipped example file,
/// exit codes, masking, and a SIGHUP that changes a limit and the log level of a running node
/// while a session stays up.
@Suite("chat-node config file, check-config and SIGHUP, the process")
struct ConfigProcessTests {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Samples/ChatNode/chat-node.example.toml").path

    @Test("check-config accepts the example file and prints every setting with the file's lines as sources")
    func example() throws {
        let (status, output, errors) = try runChatNode(["check-config", "--config", Self.example])
        #expect(status == 0, "\(errors)")
        #expect(output.contains("max-connections = 1024  # \(Self.example):"), "\(output)")
        #expect(output.contains("log-format = \"text\"  # \(Self.example):"), "\(output)")
        #expect(output.components(separatedBy: "\n").filter { !$0.isEmpty }.count == NodeSettingKey.all.count)
    }

    @Test("check-config exits 78 with every problem of file, environment and flags, each named")
    func errors() throws {
        let file = temporaryFile("prot = 1\nport = \"x\"\n")
        defer { unlink(file) }
        let (status, output, errors) = try runChatNode(
            ["check-config", "--config", file, "--scrypt-cost", "99"], environment: ["CHAT_NODE_MAX_CONNECTIONS": "none"])
        #expect(status == 78)
        #expect(output.isEmpty)
        #expect(errors.contains("chat-node: \(file):1: prot: unknown key"), "\(errors)")
        #expect(errors.contains("chat-node: \(file):2: port: expected an integer, found a string"), "\(errors)")
        #expect(errors.contains("chat-node: CHAT_NODE_MAX_CONNECTIONS: max-connections: expected an integer, found \"none\""), "\(errors)")
        #expect(errors.contains("chat-node: --scrypt-cost: scrypt-cost: 99 is outside 4...20"), "\(errors)")
        let (usage, _, _) = try runChatNode(["check-config", "--no-such-flag"])
        #expect(usage == 64)
    }

    @Test("check-config masks the PostgreSQL password, names CHAT_NODE_CONFIG's file, and a flag beats the environment")
    func masking() throws {
        let file = temporaryFile("max-connections = 3\n")
        defer { unlink(file) }
        let (status, output, errors) = try runChatNode(
            ["check-config", "--port", "9"],
            environment: ["CHAT_NODE_CONFIG": file, "CHAT_NODE_POSTGRES": "postgresql://chat:s3cret@127.0.0.1/chat", "CHAT_NODE_PORT": "8"])
        #expect(status == 0, "\(errors)")
        #expect(!output.contains("s3cret"))
        #expect(output.contains("postgres = \"postgresql://chat:***@127.0.0.1/chat\"  # CHAT_NODE_POSTGRES"), "\(output)")
        #expect(output.contains("max-connections = 3  # \(file):1"), "\(output)")
        #expect(output.contains("port = 9  # --port"), "\(output)")
    }

    @Test("serve with a file; SIGHUP applies a new limit and log level, keeps the port, refuses a bad file, and the session stays up")
    func reloadOnHangup() async throws {
        let database = temporaryDatabase()
        let settings: @Sendable (String) -> String = { extra in
            "http = false\nscrypt-cost = 4\ndatabase = \(quoted(database))\n\(extra)"
        }
        let file = temporaryFile(settings("port = 0\nmax-connections = 50\nlog-level = \"info\"\n"))
        let reloaded = settings("max-connections = 3\nlog-level = \"debug\"\nport = 7999\n")
        let log = temporaryDatabase() + ".log"
        defer {
            unlink(file)
            unlink(log)
            removeDatabase(database)
        }
        let node = try ServerProcess(executable: ChatNodeBinary.path, ["serve", "--config", file], errorLog: log)
        defer { node.kill() }
        let errors = LogFile(path: log)
        try await onLoopThread {
            let loop = RunLoopKit.RunLoop.current
            let alice = client("alice", port: node.port)
            alice.start()
            try #require(try spin(loop) { alice.state == .online })

            try reloaded.write(toFile: file, atomically: true, encoding: .utf8)
            Glibc.kill(node.process.processIdentifier, SIGHUP)
            #expect(try errors.wait(loop, for: "configuration: port: 0 → 7999 needs a restart; keeping 0"), "\(errors.text)")
            #expect(errors.text.contains("configuration reloaded: max-connections: 50 → 3"))
            #expect(errors.text.contains("configuration reloaded: log-level: \"info\" → \"debug\""))

            // Debug lines now show: the server logs each login at debug.
            let bob = client("bob", port: node.port)
            bob.start()
            try #require(try spin(loop) { bob.state == .online })
            #expect(try errors.wait(loop, for: "bob online from"), "\(errors.text)")

            try "port = ".write(toFile: file, atomically: true, encoding: .utf8)
            Glibc.kill(node.process.processIdentifier, SIGHUP)
            #expect(try errors.wait(loop, for: "\(file):1:"), "\(errors.text)")
            #expect(errors.text.contains("configuration reload refused, keeping every setting as it was:\n"))

            #expect(node.process.isRunning)
            var stored = 0
            alice.onDelivery = { _, _, state in if case .stored = state { stored += 1 } }
            try alice.send("still here", to: .user("alice"))
            #expect(try spin(loop) { stored == 1 })
            #expect(alice.state == .online)
            alice.close()
            bob.close()
        }
        node.signal(SIGTERM)
        #expect(node.exit == .exited(0))
    }

    /// A node's standard error, written to a file.
    private struct LogFile: Sendable {
        let path: String

        var text: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

        /// Runs `loop` until the log holds `line`, for up to 10 s.
        func wait(_ loop: RunLoopKit.RunLoop, for line: String) throws -> Bool {
            try spin(loop, for: .seconds(10)) { text.contains(line) }
        }
    }

    private func temporaryFile(_ text: String) -> String {
        let path = "/tmp/chat-node-config-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).toml"
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    private func quoted(_ text: String) -> String { "\"\(text)\"" }
}
