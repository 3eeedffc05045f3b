import Glibc
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

import class Foundation.Process

@testable import ChatNodeKit

/// Issue 10's chaos test: three clients send 1,000 room messages each while the node process is
/// killed with SIGKILL and restarted twice and one client's link goes silent for a while. At the end
/// every message is delivered exactly once to each other member or reported failed to its sender.
@Suite("Chaos: kill -9 twice and a silent link under load")
struct ChaosTests {
    final class Member {
        let name: String
        let client: IMClient
        let chat: ChatClient
        var sent: [String] = []
        var final: [String: IMDeliveryState] = [:]
        var received: [String: Int] = [:]  // "from\0id" → copies seen by the application
        var disconnects = 0

        init(_ name: String, port: UInt16) {
            self.name = name
            var configuration = IMClientConfiguration(user: name, password: "\(name)-pw")
            configuration.heartbeat = .fixed(.seconds(1))
            configuration.answerTimeout = .seconds(1)
            configuration.loginTimeout = .seconds(2)
            configuration.ackTimeout = .seconds(2)
            configuration.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(500))
            client = IMClient(
                configuration: configuration, connector: TCPFrameLink.connector(host: "127.0.0.1", port: port, connectTimeout: .seconds(2)))
            chat = ChatClient(connection: client)
            chat.onDelivery = { [weak self] _, id, state in if state.isFinal { self?.final[id] = state } }
            chat.onMessage = { [weak self] _, message in self?.received[message.from + "\u{0}" + message.id, default: 0] += 1 }
            client.onDisconnect = { [weak self] _, _ in self?.disconnects += 1 }
            client.start()
        }
    }

    /// What the timers change, in one place: escaping closures share it by reference (capturing
    /// local `var`s in them crashed Swift 6.3.1's AccessEnforcementSelection pass).
    final class Run {
        var node: ServerProcess
        var faults: [String] = []
        var failures: [String] = []
        var refusedAtSend = 0
        var joined = 0
        /// Ticks of the fault schedule so far.
        var ticks = 0
        var nextFault = 0
        init(node: ServerProcess) { self.node = node }
    }

    static func startNode(database: String, port: UInt16) throws -> ServerProcess {
        try ServerProcess(
            executable: ChatNodeBinary.path,
            [
                "serve", "--host", "127.0.0.1", "--port", "\(port)", "--database", database,
                "--scrypt-cost", "4", "--messages-per-second", "5000", "--log-level", "error", "--no-http"
            ])
    }

    struct Outcome: Sendable {
        var settled = false, delivered = 0, failed = 0, lost = 0, duplicated = 0, failedButSeen = 0
        var allSent = false, everyoneSawBothKills = false, echoed = false, stoppedCleanly = false
        var failures: [String] = []
        var report = ""
    }

    // The judge is the count, not the time: alone it settles in about 8 s, but beside the rest of the
    // suite (four Chromium tests, node processes) it has taken 40-56 s on two cores, past the 45 s it
    // had, and failed a fresh-clone CI run unsettled with nothing lost.
    @Test("3 × 1,000 messages, two SIGKILLs, a silent link: 0 lost, 0 duplicated, all settled", .timeLimit(.minutes(3)))
    func chaos() async throws {
        let outcome = try await onLoopThread { try Self.play() }
        print("chaos: \(outcome.report)")
        #expect(outcome.settled, "\(outcome.report)")
        #expect(outcome.failures.isEmpty, "\(outcome.report)")
        #expect(outcome.allSent, "\(outcome.report)")
        #expect(outcome.delivered + outcome.failed == 3_000, "\(outcome.report)")
        #expect(outcome.lost == 0 && outcome.duplicated == 0 && outcome.failedButSeen == 0, "\(outcome.report)")
        #expect(outcome.everyoneSawBothKills, "everyone saw both kills: \(outcome.report)")
        #expect(!outcome.echoed, "no room message comes back to its sender")
        #expect(outcome.stoppedCleanly, "SIGTERM ends the node with status 0")
    }

    /// The whole run, on the calling loop thread (a plain function: Swift 6.3.1's region checker
    /// crashed on this body written as a closure).
    static func play() throws -> Outcome {
        let loop = RunLoop.current
        let database = "/tmp/chat-node-chaos-\(getpid()).db"
        defer { for suffix in ["", "-wal", "-shm"] { unlink(database + suffix) } }
        let run = Run(node: try Self.startNode(database: database, port: 0))
        let port = run.node.port
        let link = try FaultyLink(targetPort: port)
        defer { link.close() }
        let members = [Member("ann", port: port), Member("ben", port: port), Member("cat", port: link.port)]
        try #require(try spin(loop) { members.allSatisfy { $0.client.state == .online } })
        for member in members {
            member.chat.join(room: "chaos") { if case .success = $0 { run.joined += 1 } }
        }
        try #require(try spin(loop) { run.joined == 3 })

        let perMember = 1_000
        let start = loop.now
        // Faults at fixed amounts of running time after the first message, sending going on through
        // all of them. Counted in ticks of a repeating timer, not read off the clock: a tick missed
        // while the process could not run (a stall on a blocked output pipe) is skipped, not
        // replayed, so a stall delays the schedule instead of firing every due fault at once —
        // which let a restart follow its kill before the clients had run at all.
        let tick = Duration.milliseconds(10)
        let schedule: [(ticks: Int, action: () throws -> Void)] = [
            (
                100,
                {
                    run.node.kill(); run.faults.append("kill 1")
                }
            ),
            (
                180,
                {
                    run.node = try Self.startNode(database: database, port: port); run.faults.append("restart 1")
                }
            ),
            (
                200,
                {
                    link.isSilent = true; run.faults.append("silence")
                }
            ),
            (
                350,
                {
                    run.node.kill(); run.faults.append("kill 2")
                }
            ),
            (
                430,
                {
                    run.node = try Self.startNode(database: database, port: port); run.faults.append("restart 2")
                }
            ),
            (
                550,
                {
                    link.isSilent = false; run.faults.append("link back")
                }
            )
        ]
        loop.add(
            RunLoopTimer(after: tick, repeating: tick, label: "chaos") { timer in
                run.ticks += 1
                guard run.nextFault < schedule.count else { return timer.invalidate() }
                let next = schedule[run.nextFault]
                guard run.ticks >= next.ticks else { return }
                run.nextFault += 1
                do { try next.action() } catch { run.failures.append("\(error)") }
            }, forMode: .default)
        let pump = RunLoopTimer(after: .zero, repeating: .milliseconds(6), label: "pump") { timer in
            for member in members where member.sent.count < perMember {
                do {
                    member.sent.append(try member.client.send("\(member.name) #\(member.sent.count)", to: .room("chaos")))
                } catch {
                    run.refusedAtSend += 1
                }
            }
            if members.allSatisfy({ $0.sent.count == perMember }) { timer.invalidate() }
        }
        loop.add(pump, forMode: .default)

        func expectedCopies() -> [String: Int] {
            var copies: [String: Int] = [:]
            for member in members {
                for id in member.sent { if case .stored = member.final[id] { copies[member.name + "\u{0}" + id] = 2 } }
            }
            return copies
        }
        func receivedCopies(of key: String) -> Int { members.reduce(0) { $0 + ($1.received[key] ?? 0) } }
        let settled = try spin(loop, for: .seconds(150)) {
            run.faults.count == schedule.count
                && members.allSatisfy { $0.sent.count == perMember && $0.final.count == perMember }
                && expectedCopies().allSatisfy { receivedCopies(of: $0.key) >= $0.value }
        }
        let took = loop.now - start

        var outcome = Outcome()
        outcome.settled = settled
        for member in members {
            for id in member.sent {
                let key = member.name + "\u{0}" + id
                if (member.received[key] ?? 0) > 0 { outcome.echoed = true }
                let others = members.filter { $0 !== member }
                switch member.final[id] {
                case .stored?:
                    outcome.delivered += 1
                    for other in others {
                        let copies = other.received[key] ?? 0
                        if copies == 0 { outcome.lost += 1 }
                        if copies > 1 { outcome.duplicated += copies - 1 }
                    }
                case .failed?:
                    outcome.failed += 1
                    if others.contains(where: { ($0.received[key] ?? 0) > 0 }) { outcome.failedButSeen += 1 }
                default:
                    break
                }
            }
        }
        outcome.allSent = members.allSatisfy { $0.sent.count == perMember }
        outcome.everyoneSawBothKills = members.allSatisfy { $0.disconnects >= 2 }
        outcome.failures = run.failures
        outcome.report =
            "after \(took): \(outcome.delivered) delivered, \(outcome.failed) failed, \(outcome.lost) lost, "
            + "\(outcome.duplicated) duplicated, \(outcome.failedButSeen) failed-but-delivered, \(run.refusedAtSend) refused at send; "
            + "faults \(run.faults); disconnects \(members.map { "\($0.name) \($0.disconnects)" }); failures \(run.failures)"
        for member in members { member.client.close() }
        try spin(loop) { members.allSatisfy { if case .closed = $0.client.state { return true } else { return false } } }
        // SIGTERM: the node tells nobody (all logged out), closes its database and exits 0.
        run.node.signal(SIGTERM)
        outcome.stoppedCleanly = run.node.exit == .exited(0)
        return outcome
    }
}
