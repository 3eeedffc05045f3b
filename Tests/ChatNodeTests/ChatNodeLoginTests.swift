import Glibc
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite
import RunLoopKit
import RunLoopTesting
import Testing

@testable import ChatNodeKit

@Suite("Chat node logins")
struct ChatNodeLoginTests {
    func login(_ user: String, _ password: String) -> IMLoginAttempt {
        IMLoginAttempt(user: user, password: password)
    }

    @Test(
        "two first logins of a new name at once with the same password both get in, checked against the hash that won; a third racing with another password is refused"
    )
    func firstLoginRace() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            var configuration = nodeConfiguration(path)
            configuration.logins.concurrentChecks = 2
            let node = try ChatNode(configuration: configuration)
            let authenticate = try #require(node.server.authenticator)
            var verdicts: [String: IMLoginVerdict] = [:]
            // All three read "no such account" before any hash is done: the race, every time.
            for (tag, password) in [("first", "same"), ("second", "same"), ("third", "other")] {
                authenticate(login("Newbie", password)) { verdicts[tag] = $0 }
            }
            try #require(try spin(loop) { verdicts.count == 3 })
            // One of the two made the account; the other found it made.
            let same = [verdicts["first"], verdicts["second"]]
            #expect(same.filter { $0 == .created(user: "newbie") }.count == 1, "\(same)")
            #expect(same.filter { $0 == .acceptedAs(user: "newbie") }.count == 1, "\(same)")
            #expect(verdicts["third"] == .refused(.authenticationFailed, reason: "unknown user or wrong password"))
            #expect(try #require(node.sqliteAccounts).names() == ["newbie"])
            var stopped = false
            node.stop { stopped = true }
            try #require(try spin(loop) { stopped })
        }
    }

    @Test(
        "user names ignore case: Alice registers alice, ALICE logs in as alice with its password only, an older database's Bob logs in as Bob in any case, account add refuses a case variant"
    )
    func caseInsensitiveNames() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            let node = try ChatNode(configuration: nodeConfiguration(path))
            try node.start()
            let first = client("Alice", password: "pw1", port: node.port)
            first.start()
            try #require(try spin(loop) { first.state == .online })
            #expect(node.server.onlineUsers == ["alice"])
            #expect(try #require(node.sqliteAccounts).names() == ["alice"])

            let impostor = client("ALICE", password: "nope", port: node.port)
            impostor.start()
            try #require(try spin(loop) { if case .closed = impostor.state { return true } else { return false } })
            #expect(impostor.state == .closed(.loginRefused(.authenticationFailed, "unknown user or wrong password")))
            let second = client("ALICE", password: "pw1", port: node.port)
            second.start()
            try #require(try spin(loop) { second.state == .online })
            #expect(node.server.onlineUsers == ["alice"])
            #expect(node.server.sessions.filter { $0.user == "alice" }.count == 2, "one account, two sessions")

            // A database from before: a mixed-case name keeps its spelling.
            try #require(node.sqliteStore).database.query(
                "INSERT INTO accounts(name, password_hash) VALUES ('Bob', ?)", [.text(PasswordHasher.forTests.hash("pw2"))])
            try #require(node.sqliteStore).database.query("INSERT INTO users(name) VALUES ('Bob')")
            let bob = client("bOB", password: "pw2", port: node.port)
            bob.start()
            try #require(try spin(loop) { bob.state == .online })
            #expect(node.server.onlineUsers == ["Bob", "alice"])

            // Recipients and history partners ignore case too.
            var received: [String] = []
            bob.onMessage = { _, message in received.append(message.text) }
            var finals: [IMDeliveryState] = []
            first.onDelivery = { _, _, state in if state.isFinal { finals.append(state) } }
            try first.send("to BOB", to: .user("BOB"))
            try first.send("to bob", to: .user("bob"))
            try #require(try spin(loop) { received.count == 2 })
            #expect(received == ["to BOB", "to bob"] && finals.allSatisfy { if case .stored = $0 { return true } else { return false } })

            #expect(try node.addAccount(user: "CAROL", password: "pw3"))
            #expect(try !node.addAccount(user: "Carol", password: "pw4"))
            #expect(try !node.addAccount(user: "bob", password: "pw4"))
            #expect(try #require(node.sqliteAccounts).names() == ["Bob", "alice", "carol"])
            for each in [first, second, bob] { each.close() }
            var stopped = false
            node.stop { stopped = true }
            try #require(try spin(loop) { stopped })
        }
    }
}
