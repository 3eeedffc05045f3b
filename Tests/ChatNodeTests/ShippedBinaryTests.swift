import Foundation
import Glibc
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// What ships does not carry the testing libraries: no shipped target depends on RunLoopTesting, so
/// neither XCTest nor Swift Testing is linked into the programs.
@Suite("Shipped binaries")
struct ShippedBinaryTests {
    /// The testing libraries a binary is dynamically linked against, as `ldd` lists them.
    private func testingLibraries(of path: String) throws -> [String] {
        try #require(FileManager.default.isExecutableFile(atPath: path), "not built: \(path)")
        let result = try runCommand(["/usr/bin/ldd", path])
        try #require(result.status == 0, "ldd \(path): \(result.errorOutput)")
        return result.output.split(separator: "\n")
            .compactMap { $0.split(separator: " ").first.map(String.init) }
            .filter { $0.contains("XCTest") || $0.contains("Testing") }
    }

    @Test("ldd of chat-node and loop-record shows no XCTest and no Testing library")
    func noTestingLibraries() throws {
        // The witness: the test bundle itself links both, so the check does see them when they are there.
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
        let linkedByTests = try testingLibraries(of: bundle)
        #expect(linkedByTests.contains { $0.contains("XCTest") }, "\(linkedByTests)")
        #expect(linkedByTests.contains { $0.contains("Testing") }, "\(linkedByTests)")

        #expect(try testingLibraries(of: ChatNodeBinary.path) == [])
        #expect(try testingLibraries(of: builtProductPath("loop-record")) == [])
    }
}

/// `chat-node` as an operator meets it: what it says when a command, a port or a file is wrong.
@Suite("chat-node: the command line")
struct ChatNodeCommandLineTests {
    private func chatNode(_ arguments: String...) throws -> CommandResult {
        try #require(FileManager.default.isExecutableFile(atPath: ChatNodeBinary.path), "not built: \(ChatNodeBinary.path)")
        return try runCommand([ChatNodeBinary.path] + arguments)
    }

    @Test("no arguments: usage on standard error and a failure; a misspelt command: did you mean …")
    func usage() throws {
        let bare = try chatNode()
        #expect(bare.status != 0)
        #expect(bare.errorOutput.contains("USAGE:") && bare.errorOutput.contains("serve"), "\(bare.errorOutput)")
        let typo = try chatNode("server")
        #expect(typo.status != 0)
        #expect(typo.errorOutput.contains("chat-node: no command server — did you mean serve?"), "\(typo.errorOutput)")
        let nonsense = try chatNode("frobnicate")
        #expect(nonsense.status != 0 && nonsense.errorOutput.contains("no command frobnicate\n"), "\(nonsense.errorOutput)")
        let help = try chatNode("--help")
        #expect(help.status == 0 && help.output.contains("SUBCOMMANDS:"), "help still asks for nothing more")
    }

    @Test("serve on a port in use names the port, which listener, the flag, and creates no database")
    func portInUse() async throws {
        try await onLoopThread {
            let taken = TCPListener()
            try taken.listen(host: "127.0.0.1", port: 0)
            defer { taken.close() }
            let database = temporaryDatabase()
            defer { removeDatabase(database) }

            let im = try chatNode("serve", "--port", "\(taken.port)", "--http-port", "0", "--database", database)
            #expect(im.status == 1)
            #expect(
                im.errorOutput.contains("port \(taken.port) on 127.0.0.1 (IM over TCP) is in use") && im.errorOutput.contains("--port PORT"),
                "\(im.errorOutput)")
            #expect(access(database, F_OK) != 0, "bound before the database was created")

            let http = try chatNode("serve", "--port", "0", "--http-port", "\(taken.port)", "--database", database)
            #expect(http.status == 1)
            #expect(
                http.errorOutput.contains("port \(taken.port) on 127.0.0.1 (HTTP: the page and its WebSocket) is in use")
                    && http.errorOutput.contains("--http-port PORT") && http.errorOutput.contains("--no-http"), "\(http.errorOutput)")
            #expect(access(database, F_OK) != 0)
        }
    }

    @Test("a file that is not a database, and a missing directory, are named with what to do")
    func databaseErrors() throws {
        let notADatabase = temporaryDatabase()
        defer { unlink(notADatabase) }
        let file = try #require(fopen(notADatabase, "w"))
        fputs(String(repeating: "not a database at all\n", count: 100), file)
        fclose(file)
        let garbage = try chatNode("account", "list", "--database", notADatabase)
        #expect(garbage.status != 0)
        #expect(
            garbage.errorOutput.contains("\(notADatabase) is not a SQLite database (SQLite error 26: file is not a database)")
                && garbage.errorOutput.contains("--database"), "\(garbage.errorOutput)")

        let missing = "/tmp/chat-node-no-such-directory-\(getpid())/chat.db"
        let nowhere = try chatNode("serve", "--port", "0", "--http-port", "0", "--database", missing)
        #expect(nowhere.status == 1)
        #expect(
            nowhere.errorOutput.contains("its directory /tmp/chat-node-no-such-directory-\(getpid()) does not exist"),
            "\(nowhere.errorOutput)")
    }

    @Test("a client where nothing listens: cannot connect, connection refused, is the node running?")
    func clientRefused() async throws {
        let port = try await onLoopThread { () throws -> UInt16 in
            let probe = TCPListener()
            try probe.listen(host: "127.0.0.1", port: 0)
            defer { probe.close() }
            return probe.port
        }
        let result = try chatNode("client", "--user", "alice", "--password", "pw", "--port", "\(port)", "--drain-seconds", "2")
        #expect(
            result.output.contains("* cannot connect to 127.0.0.1:\(port): connection refused (is the node running?) — retrying in "),
            "stdout:\n\(result.output)\nstderr:\n\(result.errorOutput)")
        #expect(!result.output.contains("* reconnecting in"))
    }
}

@Suite("chat-node demo: its length")
struct DemoLengthTests {
    @Test("`chat-node help demo` and both READMEs give the demo the same length")
    func sameLength() throws {
        let help = try runCommand([ChatNodeBinary.path, "help", "demo"])
        let text = help.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        // The help gives the single-node demo's length first, then the cluster demo's (--cluster).
        let lengths = text.matches(of: /about (\d+) s/).map { String($0.1) }
        try #require(lengths.count == 2, "\(help.output)")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        for readme in ["README.md", "Samples/ChatNode/README.md"] {
            let content = try String(contentsOf: root.appendingPathComponent(readme), encoding: .utf8)
            let demoLines = content.split(separator: "\n").filter { $0.contains("chat-node demo") && $0.contains(" s)") }
            let single = demoLines.filter { !$0.contains("--cluster") }
            let cluster = demoLines.filter { $0.contains("--cluster") }
            #expect(!single.isEmpty && single.allSatisfy { $0.contains("(about \(lengths[0]) s)") }, "\(readme): \(single)")
            #expect(cluster.allSatisfy { $0.contains("(about \(lengths[1]) s)") }, "\(readme): \(cluster)")
        }
    }
}
