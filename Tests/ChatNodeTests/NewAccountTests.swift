import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

@testable import ChatNodeKit

/// A new name's account is made only once the person typed its password twice alike, and the login
/// that made it says so (docs/PROTOCOL.md §5, New accounts).
@Suite("Chat node: new accounts")
struct NewAccountTests {
    @Test(
        "a login to existing accounts only: an unknown name is refused as unknown and no account made; the login without the flag makes it and says so, once; a known name's login never reads as unknown"
    )
    func protocolFlags() async throws {
        try await onLoopThread {
            try withStartedNode { node, loop in
                func login(_ existingOnly: Bool, password: String = "pw") throws -> IMClient {
                    var configuration = clientConfiguration("newbie", password: password)
                    configuration.existingAccountOnly = existingOnly
                    let client = IMClient(configuration: configuration, connector: TCPFrameLink.connector(host: "127.0.0.1", port: node.port))
                    client.start()
                    try #require(try spin(loop) { if case .closed = client.state { true } else { client.state == .online } })
                    return client
                }
                let probe = try login(true)
                #expect(probe.state == .closed(.loginRefused(.authenticationFailed, "no account has this name")))
                #expect(probe.isAccountUnknown && !probe.isAccountCreated)
                #expect(try #require(node.sqliteAccounts).names().isEmpty, "nothing made for a login to existing accounts only")

                let first = try login(false)
                #expect(first.state == .online && first.isAccountCreated)
                let again = try login(true)
                #expect(again.state == .online && !again.isAccountCreated, "an existing account: no flag either way")
                let wrong = try login(true, password: "typo")
                #expect(wrong.state == .closed(.loginRefused(.authenticationFailed, "unknown user or wrong password")))
                #expect(!wrong.isAccountUnknown, "a known name with a wrong password is not an unknown one")
                for client in [first, again] { client.close() }
            }
        }
    }

    @Test(
        "the terminal client at a terminal: a new name asks for the password again; a different one makes no account (status 1); the same one makes it, \"* account created\"; the next login asks nothing"
    )
    func terminalAsksTwice() async throws {
        try await onLoopThread {
            try withStartedNode { node, loop in
                func session(typedAgain: String) throws -> (Transcript, Int32, asked: Int) {
                    let seen = Transcript()
                    let asked = Counter()
                    let terminal = terminal("newbie", port: node.port, into: seen) {
                        $0.followsReachability = false
                        $0.confirmNewAccountPassword = { user in
                            asked.increment()
                            return user == "newbie" ? typedAgain : nil
                        }
                    }
                    terminal.start()
                    terminal.endOfInput()
                    try #require(try spin(loop) { terminal.exitStatus != nil }, "\(seen.dump)")
                    return (seen, terminal.exitStatus ?? -1, asked.value)
                }
                let (mistyped, mistypedStatus, askedOnce) = try session(typedAgain: "pW")
                #expect(askedOnce == 1 && mistypedStatus == 1, "\(mistyped.dump)")
                #expect(mistyped.contains("* newbie is a new name on this node: type the password again"), "\(mistyped.dump)")
                #expect(mistyped.contains("! the passwords differ: no account made"), "\(mistyped.dump)")
                #expect(try #require(node.sqliteAccounts).names().isEmpty)

                let (made, madeStatus, _) = try session(typedAgain: "pw")
                #expect(madeStatus == 0, "\(made.dump)")
                let connected = try #require(made.index(of: "* connected"), "\(made.dump)")
                #expect(made.lines[connected + 1] == "* account created", "\(made.dump)")
                #expect(try #require(node.sqliteAccounts).names() == ["newbie"])

                let (known, knownStatus, askedAgain) = try session(typedAgain: "pw")
                #expect(knownStatus == 0 && askedAgain == 0, "\(known.dump)")
                #expect(known.contains("* connected") && !known.contains("account created"), "\(known.dump)")
            }
        }
    }
}

/// A count a `@Sendable` closure on the loop's thread adds to.
private final class Counter: @unchecked Sendable {
    private(set) var value = 0
    func increment() { value += 1 }
}
