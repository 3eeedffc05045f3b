import ChatNodeKit
import Glibc
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Synchronization
import Testing

/// `chat-node account …` and `chat-node backup` as an operator runs them: exit statuses, messages,
/// and what a node serving the file then does.
@Suite("Account and backup commands")
struct AccountCommandTests {
    private func chatNode(_ arguments: String...) throws -> CommandResult {
        try runCommand([ChatNodeBinary.path] + arguments)
    }

    /// `chat-node ARGUMENTS` with `input` on its standard input.
    private func chatNode(input: String, _ arguments: String...) throws -> CommandResult {
        try runCommand(["/bin/sh", "-c", "printf '%s\\n' \"$0\" | \"$@\"", input, ChatNodeBinary.path] + arguments)
    }

    @Test("account commands refuse a database that does not exist, naming it, and create nothing")
    func missingDatabase() throws {
        let path = temporaryDatabase()
        for command in [["list"], ["disable", "alice"], ["remove", "alice"]] {
            let result = try runCommand([ChatNodeBinary.path, "account"] + command + ["--database", path])
            #expect(result.status != 0, "\(command)")
            #expect(result.errorOutput.contains("no database \(path)") && result.errorOutput.contains("--database"), "\(result.errorOutput)")
        }
        let added = try chatNode(input: "pw", "account", "add", "--user", "alice", "--database", path)
        #expect(added.status != 0)
        #expect(access(path, F_OK) != 0, "no empty database made")
        let backup = try chatNode("backup", path + ".copy", "--database", path)
        #expect(backup.status != 0 && backup.errorOutput.contains("no database \(path)"))
    }

    @Test("every account command fails when it did nothing: a name taken, unknown, disabled or enabled already")
    func nothingDone() throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        #expect(try chatNode("migrate", "--database", path).status == 0)
        let created = try chatNode(input: "pw", "account", "add", "--user", "alice", "--database", path)
        #expect(created.status == 0 && created.output == "created alice\n")
        let again = try chatNode(input: "pw", "account", "add", "--user", "ALICE", "--database", path)
        #expect(again.status != 0 && again.errorOutput.contains("ALICE exists already"))
        let steps: [([String], Bool, String)] = [
            (["disable", "Alice"], true, "disabled alice"),
            (["disable", "alice"], false, "alice is disabled already"),
            (["enable", "alice"], true, "enabled alice"),
            (["enable", "alice"], false, "alice is not disabled"),
            (["disable", "bob"], false, "no account bob"),
            (["passwd", "bob"], false, "no account bob"),
            (["remove", "alice"], true, "removed alice"),
            (["remove", "alice"], false, "no account alice")
        ]
        for (command, succeeds, said) in steps {
            let result =
                command[0] == "passwd"
                ? try runCommand(["/bin/sh", "-c", "echo new | \"$@\"", "sh", ChatNodeBinary.path, "account"] + command + ["--database", path])
                : try runCommand([ChatNodeBinary.path, "account"] + command + ["--database", path])
            #expect((result.status == 0) == succeeds, "\(command): \(result.errorOutput)")
            #expect((succeeds ? result.output : result.errorOutput).contains(said), "\(command): \(result.output) \(result.errorOutput)")
        }
    }

    @Test("passwd from standard input: the old password is refused, the new one logs in; a disabled account's login is refused")
    func passwordAndDisabledLogin() async throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        #expect(try chatNode("migrate", "--database", path).status == 0)
        #expect(try chatNode(input: "old", "account", "add", "--user", "carol", "--database", path).status == 0)
        let changed = try chatNode(input: "new", "account", "passwd", "CAROL", "--database", path)
        #expect(changed.status == 0 && changed.output == "password changed for carol\n", "\(changed.errorOutput)")
        #expect(try chatNode("account", "disable", "carol", "--database", path).status == 0)
        try await onLoopThread {
            let loop = RunLoop.current
            let node = try ChatNode(configuration: nodeConfiguration(path))
            try node.start()
            defer { node.abort() }
            func login(_ password: String) throws -> IMConnectionState {
                let attempt = client("carol", password: password, port: node.port)
                attempt.start()
                try spin(loop) { if case .online = attempt.state { true } else if case .closed = attempt.state { true } else { false } }
                defer { attempt.close() }
                return attempt.state
            }
            #expect(try login("new") == .closed(.loginRefused(.authenticationFailed, "account disabled")))
            #expect(try login("old") == .closed(.loginRefused(.authenticationFailed, "unknown user or wrong password")))
            #expect(try completion(of: loop) { node.setAccountDisabled(false, user: "carol", completion: $0) }.get() == .done(account: "carol"))
            #expect(try login("new") == .online)
            #expect(try login("old") == .closed(.loginRefused(.authenticationFailed, "unknown user or wrong password")))
        }
    }

    @Test("backup while a node serves traffic: the copy passes its check and a second node on it sees the messages")
    func backupWhileServing() async throws {
        let path = temporaryDatabase()
        let copy = temporaryDatabase()
        defer {
            removeDatabase(path)
            removeDatabase(copy)
        }
        try await onLoopThread {
            let loop = RunLoop.current
            let node = try ChatNode(configuration: nodeConfiguration(path))
            try node.start()
            let bob = client("bob", port: node.port)
            bob.start()
            try #require(try spin(loop) { bob.state == .online })
            let alice = client("alice", port: node.port)
            var stored = 0
            alice.onDelivery = { _, _, state in if case .stored = state { stored += 1 } }
            alice.start()
            for index in 0..<20 { try alice.send("before \(index)", to: .user("bob")) }
            try #require(try spin(loop) { stored == 20 })

            let answer = CommandAnswer()
            let backup = JoinableThread {
                let result = try? runCommand([ChatNodeBinary.path, "backup", copy, "--database", path])
                answer.value.withLock { $0 = result }
            }
            // The node keeps storing and delivering while the copy is taken.
            var during = 0
            try spin(loop) {
                if stored == 20 + during, during < 200 {
                    _ = try? alice.send("during \(during)", to: .user("bob"))
                    during += 1
                }
                return answer.value.withLock { $0 != nil }
            }
            backup.join()
            let result = try #require(answer.value.withLock { $0 })
            #expect(
                result.status == 0 && result.output.contains("backed up \(path) to \(copy)") && result.output.contains("integrity ok"),
                "\(result.errorOutput)")
            alice.close()
            bob.close()
            try node.stopGracefully()

            let second = try ChatNode(configuration: nodeConfiguration(copy))
            try second.start()
            defer { second.abort() }
            let store = try #require(second.sqliteStore)
            let page = try store.history(HistoryQuery(conversation: .user("alice")), for: "bob", limit: 500).get()
            let texts = Set(page.messages.map(\.text))
            #expect((0..<20).allSatisfy { texts.contains("before \($0)") }, "every message stored before the backup")
            let bobOnCopy = client("bob", port: second.port)
            bobOnCopy.start()
            try #require(try spin(loop) { bobOnCopy.state == .online }, "the copy holds the accounts")
            bobOnCopy.close()
        }
    }
}

/// What a command run on another thread gave, for the loop thread to read.
private final class CommandAnswer: Sendable {
    let value = Mutex<CommandResult?>(nil)
}
