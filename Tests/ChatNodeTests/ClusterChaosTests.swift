import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

@testable import ChatNodeKit

/// Issue 20's chaos suite: three `chat-node serve` processes on a throw-away PostgreSQL and Redis,
/// six clients chatting across them (the cluster demo's harness, ``ClusterRig``), and one fault per
/// test during the traffic. Counted per message: nothing acknowledged is lost, nothing is shown twice,
/// nothing is left unsettled. One test at a time: each runs five server processes.
@Suite("Chaos with three node processes: one fault each during live traffic", .serialized)
struct ClusterChaosTests {
    @Test(
        "kill -9 of a node: its chatting clients reconnect to the others; a user who stays away is offline everywhere within one lease, those who moved stay online; later it comes back and gets everything"
    )
    func nodeKilled() async throws {
        let stays = ClusterRig.User(name: "gus", home: 2, chats: false, failsOver: false)
        let outcome = try await chaos(extraUsers: [stays]) { rig, notes in
            let watchers = rig.settings.users.filter { $0.chats && $0.home != 2 }.map(\.name)
            let moved = rig.settings.users.filter { $0.chats && $0.home == 2 }.map(\.name)
            let killed = DemoClock.now()
            rig.killNode(2)
            let seenOffline = try rig.pacing.wait(upTo: .seconds(30)) {
                try watchers.allSatisfy { try rig.presence(of: "gus", seenBy: $0, since: killed).contains { !$0.isOnline } }
            }
            if seenOffline {
                let last = try watchers.compactMap { try rig.presence(of: "gus", seenBy: $0, since: killed).first { !$0.isOnline }?.at }.max()
                notes.durations["gus offline everywhere after"] = last.map { $0 - killed }
            }
            try rig.pacing.waitUntil("the moved clients online") { try rig.cast.all { $0.isOnline || $0.name == "gus" } }
            // Past one more reaping round: a wrong offline announcement of a moved user would be out by now.
            try rig.pacing.pause(rig.settings.lease / 5 + .milliseconds(500))
            for user in moved {
                for watcher in watchers {
                    let last = try rig.presence(of: user, seenBy: watcher, since: killed).last
                    if last?.isOnline == false { notes.problems.append("\(user) last seen offline by \(watcher)") }
                }
                if try rig.node(of: user) == rig.nodes[2].id { notes.problems.append("\(user) still on the dead node") }
            }
            try rig.release("gus")
            try rig.pacing.waitUntil("gus back on another node") { try rig.cast.all { $0.isOnline } }
        }
        let lease = ClusterRig.Settings.defaultLease
        let offline = try #require(outcome.notes.durations["gus offline everywhere after"], "gus never seen offline by every watcher\n\(outcome.log)")
        // One lease period: the lease lapses at most `ttl` after the kill, a reaper looks every ttl/5.
        #expect(offline <= lease + lease / 5 + .seconds(1), "\(offline)")
        #expect(outcome.notes.problems.isEmpty, "\(outcome.notes.problems)")
        #expect(outcome.tally.perRecipient["gus"].map { $0.received == $0.expected && $0.expected > 0 } == true, "\(outcome.tally)")
    }

    @Test("Redis restarts empty mid-traffic: latency, not messages")
    func redisRestart() async throws {
        try await chaos { rig, _ in
            try rig.restartRedis()
            try rig.pacing.pause(.seconds(3))
        }
    }

    @Test("Redis CLIENT KILL of every node connection mid-traffic: the nodes reconnect, nothing lost")
    func redisClientKill() async throws {
        let outcome = try await chaos { rig, notes in
            let killed = try rig.redisCommand(["CLIENT", "KILL", "TYPE", "normal"])
            notes.counts["connections killed"] = Int(killed) ?? 0
            try rig.pacing.pause(.seconds(2))
        }
        // Each node holds at least its publisher, its reader and its presence connection.
        #expect((outcome.notes.counts["connections killed"] ?? 0) >= 3, "\(outcome.notes.counts)")
    }

    @Test("Redis DEBUG SLEEP 5 mid-traffic (longer than the lease): nothing lost")
    func redisSleeps() async throws {
        try await chaos { rig, _ in
            guard let redis = rig.redis else { return }
            let sleeper = JoinableThread { _ = try? redis.command(["DEBUG", "SLEEP", "5"]) }
            sleeper.join()
            try rig.pacing.pause(.seconds(2))
        }
    }

    @Test("a node cut from Redis for 10 s (its relay drops everything, connections stay open), then restored: nothing lost")
    func nodeCutFromRedis() async throws {
        let outcome = try await chaos(relayedNode: 2) { rig, notes in
            let cut = DemoClock.now()
            try rig.cutFromRedis(true)
            let id = rig.nodes[2].id
            // The node itself says Redis stopped answering: the cut is real, not a relay that kept passing.
            if try rig.pacing.wait(upTo: .seconds(10), until: { rig.log(of: id).contains("timed out") }) {
                notes.durations["node noticed the cut after"] = DemoClock.now() - cut
            }
            try rig.pacing.pause(.seconds(10) - (DemoClock.now() - cut))
            try rig.cutFromRedis(false)
            try rig.pacing.pause(.seconds(3))
        }
        #expect(outcome.notes.durations["node noticed the cut after"] != nil, "the cut node never logged a Redis timeout\n\(outcome.log)")
    }

    @Test("PostgreSQL stopped with pg_ctl stop -m immediate for 3 s, then started: SENDs resent, nothing lost")
    func postgresStopped() async throws {
        let outcome = try await chaos { rig, notes in
            let start = DemoClock.now()
            rig.stopPostgres()
            try rig.pacing.pause(.seconds(3))
            try rig.startPostgres()
            try rig.pacing.pause(.seconds(2))
            notes.counts["resends"] = try rig.witness(from: start, to: DemoClock.now()).resends
        }
        #expect((outcome.notes.counts["resends"] ?? 0) > 0, "SENDs during the outage were refused and resent: \(outcome.notes.counts)")
    }
}

/// What one chaos run counted and noted.
private struct ChaosOutcome: Sendable {
    var tally: DeliveryTally
    var notes: ChaosNotes
    /// Nodes that ended although no fault stopped them, with how (``ClusterRig/unexpectedEnds``).
    var unexpectedEnds: [String]
    /// The narration and the nodes' logs, for a failure's message.
    var log: String
}

/// What a fault's script measured, for the test to check once the run is over.
private struct ChaosNotes: Sendable {
    var durations: [String: Duration] = [:]
    var counts: [String: Int] = [:]
    /// Wrong things the script saw.
    var problems: [String] = []
}

/// Starts a ``ClusterRig`` of six chatting users (and `extraUsers`) on a thread of its own, lets the
/// traffic run a second, runs `fault`, settles, and checks the guarantee: every acknowledged message
/// shown once to each recipient, none unsettled, none failed.
@discardableResult
private func chaos(
    extraUsers: [ClusterRig.User] = [], relayedNode: Int? = nil, _ fault: @escaping @Sendable (ClusterRig, inout ChaosNotes) throws -> Void
) async throws -> ChaosOutcome {
    let lines = Lines()
    let outcome: ChaosOutcome = try await withCheckedThrowingContinuation { continuation in
        JoinableThread.detach {
            continuation.resume(
                with: Result {
                    var settings = ClusterRig.Settings(
                        nodeExecutable: ChatNodeBinary.path,
                        users: ClusterRig.Settings.spread(["alice", "bob", "carol", "dave", "erin", "frank"], over: 3) + extraUsers)
                    settings.relayedNode = relayedNode
                    let rig = ClusterRig(settings: settings, pacing: DemoPacing(output: { lines.append($0) }, stepLimit: .seconds(60)))
                    defer { rig.tearDown() }
                    var notes = ChaosNotes()
                    do {
                        try rig.start()
                        try rig.startTraffic()
                        try rig.pacing.pause(.seconds(1))
                        try fault(rig, &notes)
                        try rig.settle()
                        return ChaosOutcome(
                            tally: try rig.tally(), notes: notes, unexpectedEnds: rig.unexpectedEnds,
                            log: lines.all.joined(separator: "\n") + "\n" + rig.logs)
                    } catch {
                        throw NodeTestFailure("\(error)\n\(lines.all.joined(separator: "\n"))\n\(rig.logs)")
                    }
                })
        }
    }
    // Before the counts: a node that died by itself explains them.
    #expect(outcome.unexpectedEnds.isEmpty, "\(outcome.unexpectedEnds)\n\(outcome.log)")
    let tally = outcome.tally
    #expect(tally.acknowledged > 20, "traffic ran: \(tally)")
    #expect(tally.lost == 0 && tally.duplicatesShown == 0 && tally.unsettled == 0, "\(tally)\n\(outcome.log)")
    #expect(tally.failed == 0, "\(tally)")
    return outcome
}
