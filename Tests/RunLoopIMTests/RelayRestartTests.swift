import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

@Suite("Server process killed and restarted")
struct RelayRestartTests {
    /// The relay keeps its messages in SQLite: a message it acknowledged survives the SIGKILL that may
    /// come before its DELIVER reaches bob (with an in-memory relay this test loses a few messages
    /// when the machine is busy — the window between SEND_ACK and DELIVER).
    @Test("kill -9 twice: clients reconnect; every message is delivered exactly once, none fails")
    func killAndRestart() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let database = temporaryPath("relay.db")
            defer { removeDatabase(database) }
            var relay = try startRelay(database: database, port: 0)
            let port = relay.port
            let tweak: (inout IMClientConfiguration) -> Void = {
                $0.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200))
            }
            let alice = makeClient(clientConfiguration("alice", tweak), port: port)
            let bob = makeClient(clientConfiguration("bob", tweak), port: port)
            let aliceLog = ClientRecorder()
            let bobLog = ClientRecorder()
            aliceLog.attach(to: alice)
            bobLog.attach(to: bob)
            alice.start()
            bob.start()
            try #require(try spin(loop) { alice.state == .online && bob.state == .online })

            var sent: [String] = []
            func send(_ count: Int) throws {
                for _ in 0..<count { sent.append(try alice.send("message \(sent.count)", to: .user("bob"))) }
            }
            // 1. Steady traffic, all acknowledged and delivered.
            try send(20)
            try #require(try spin(loop) { aliceLog.storedCount == 20 && bobLog.messages.count == 20 })

            // 2. Messages in flight when the server dies: resent after the restart, de-duplicated.
            try send(20)
            relay.kill()
            try #require(try spin(loop) { alice.state != .online && bob.state != .online })
            // 3. Messages sent while the server is down: queued, flushed in order after login.
            try send(20)
            relay = try startRelay(database: database, port: port)
            let settled = try spin(loop) { aliceLog.storedCount == 60 && bobLog.messages.count == 60 }
            try #require(
                settled,
                "alice delivered \(aliceLog.storedCount), failed \(aliceLog.failedCount), bob got \(bobLog.messages.count); alice \(alice.state) \(aliceLog.states.suffix(6)), bob \(bob.state) \(bobLog.states.suffix(6)); unsettled \(alice.unsettledMessages.count)"
            )

            // A second kill and restart with everything settled: nothing moves twice.
            relay.kill()
            try #require(try spin(loop) { alice.state != .online })
            relay = try startRelay(database: database, port: port)
            try #require(try spin(loop) { alice.state == .online && bob.state == .online })
            try send(5)
            try #require(try spin(loop) { aliceLog.storedCount == 65 && bobLog.messages.count == 65 })

            #expect(Set(bobLog.messages.map(\.id)).count == bobLog.messages.count, "no duplicate reached the application")
            #expect(Set(bobLog.messages.map(\.id)) == Set(sent), "nothing lost")
            #expect(aliceLog.failedCount == 0)
            #expect(aliceLog.settledTwice.isEmpty)
            #expect(aliceLog.disconnects.count == 2 && bobLog.disconnects.count == 2, "one disconnect per kill per client")
            // Per sender, order is kept within each connection's flush (queued messages in send order).
            let order = bobLog.messages.map { Int($0.text.split(separator: " ")[1])! }
            #expect(Array(order[40..<65]) == Array(40..<65))
            alice.close()
            bob.close()
            try spin(loop) { alice.state == .closed(.userClosed) && bob.state == .closed(.userClosed) }
            relay.kill()
        }
    }
}

/// `im-relay` on 127.0.0.1 with its messages in `database`.
func startRelay(database: String, port: UInt16) throws -> ServerProcess {
    try ServerProcess(
        executable: builtProductPath("im-relay"), ["--host", "127.0.0.1", "--port", "\(port)", "--log-level", "warning", "--database", database])
}
