import Foundation
import RunLoopKit

/// `chat-node demo --cluster`: a throw-away PostgreSQL and Redis, three `chat-node serve` processes
/// and six clients spread over them, chatting in a room and directly across nodes while one node is
/// killed (its clients reconnect to another), Redis restarts empty, and PostgreSQL stops for a few
/// seconds; then the same per-message count as ``ChatDemo``, and one line per fault with what the
/// clients saw of it. Every process and temporary directory goes at the end, also after a Ctrl-C.
public enum ClusterDemo {
    public struct Options: Sendable {
        /// The `chat-node` executable the nodes and `migrate` run (the demo's own, from the command).
        public var nodeExecutable: String
        /// Where the narration goes (a line at a time, from any thread).
        public var output: @Sendable (String) -> Void
        /// Asked while the demo waits: true ends it early (``ChatDemo/Failure/interrupted``), cleaned up.
        public var isInterrupted: @Sendable () -> Bool = { false }
        /// How long PostgreSQL stays stopped.
        public var postgresDowntime: Duration = .seconds(3)
        /// How long one step may wait for what it expects before the demo gives up as stuck.
        public var stepLimit: Duration = .seconds(30)

        public init(nodeExecutable: String, output: @escaping @Sendable (String) -> Void = { print($0) }) {
            self.nodeExecutable = nodeExecutable
            self.output = output
        }
    }

    /// What the demo counted.
    public struct Summary: Sendable, CustomStringConvertible {
        /// What became of each message.
        public var messages = DeliveryTally()
        /// Each fault, and what the clients saw of it.
        public var faults: [(fault: String, seen: String)] = []
        public var duration: Duration = .zero

        /// Every message delivered exactly once or reported failed; none left hanging.
        public var isClean: Bool { messages.isClean }

        public var description: String {
            let faultLines = faults.map { "  \($0.fault.padding(toLength: 24, withPad: " ", startingAt: 0)) \($0.seen)" }
            return """
                \(messages)
                faults, and what the clients saw
                \(faultLines.joined(separator: "\n"))
                demo took                  \(formatDemoSeconds(duration))
                verdict                    \(isClean ? "every message delivered exactly once or reported failed" : "NOT CLEAN")
                """
        }
    }

    /// Runs the demo (about 25 seconds) and returns its counts. Call from a thread that is not one of
    /// the demo's loops (the command's main thread).
    public static func run(_ options: Options) throws -> Summary {
        let pacing = DemoPacing(output: options.output, stepLimit: options.stepLimit, isInterrupted: options.isInterrupted)
        let names = ["alice", "bob", "carol", "dave", "erin", "frank"]
        let rig = ClusterRig(
            settings: ClusterRig.Settings(nodeExecutable: options.nodeExecutable, users: ClusterRig.Settings.spread(names, over: 3)),
            pacing: pacing)
        defer {
            pacing.section("Stopping: clients, nodes, Redis and PostgreSQL; their temporary directories removed")
            rig.tearDown()
        }
        return try play(rig, options)
    }

    /// A line on how the traffic is doing, between the faults.
    private static func progress(_ rig: ClusterRig) throws {
        let tally = try rig.tally()
        rig.pacing.note("so far: \(tally.sent) sent, \(tally.acknowledged) acknowledged, \(tally.unsettled) waiting for their acknowledgement")
    }

    private static func play(_ rig: ClusterRig, _ options: Options) throws -> Summary {
        let pacing = rig.pacing
        let narrate = pacing.narrator("rig")
        var summary = Summary()
        pacing.section("A cluster on this machine: PostgreSQL, Redis, three chat-node processes, six clients")
        try rig.start()
        for user in rig.settings.users { pacing.note("\(user.name) on \(try rig.node(of: user.name)), in #\(rig.settings.room)") }

        pacing.section("Live traffic: each client sends a line every 0.2 s, to #lobby or directly to someone on another node")
        try rig.startTraffic()
        try pacing.pause(.seconds(2))
        try progress(rig)

        let victim = rig.nodes[2].id
        let stranded = rig.settings.users.filter { $0.home == 2 }.map(\.name)
        pacing.section("Fault 1: kill -9 node \(victim) (\(stranded.joined(separator: " and ")) on it); its clients reconnect to another node")
        var windows: [(fault: String, start: LoopInstant, end: LoopInstant)] = []
        var start = DemoClock.now()
        rig.killNode(2)
        narrate("kill -9 \(victim)")
        try pacing.waitUntil("\(stranded.joined(separator: ", ")) back online") { try rig.cast.all { $0.isOnline } }
        try pacing.pause(.seconds(1))
        windows.append(("kill -9 \(victim)", start, DemoClock.now()))
        try progress(rig)

        pacing.section("Fault 2: Redis restarts, empty: streams, leases and counts gone; the nodes reconnect and register again")
        start = DemoClock.now()
        try rig.restartRedis()
        narrate("Redis killed and started again, empty, on the same socket")
        try pacing.pause(.seconds(3))
        windows.append(("Redis restart", start, DemoClock.now()))
        try progress(rig)

        pacing.section(
            "Fault 3: PostgreSQL stops (pg_ctl stop -m immediate) for \(formatDemoSeconds(options.postgresDowntime)): SENDs fail, clients resend")
        start = DemoClock.now()
        rig.stopPostgres()
        narrate("PostgreSQL stopped")
        try pacing.pause(options.postgresDowntime)
        try rig.startPostgres()
        narrate("PostgreSQL started again")
        try pacing.pause(.seconds(2))
        windows.append(("PostgreSQL stopped", start, DemoClock.now()))
        try progress(rig)

        pacing.section("Traffic stops; waiting until every message is settled and shown")
        try rig.settle()
        summary.messages = try rig.tally()
        // After the settling: a message sent during a fault may be shown only after it.
        for window in windows { summary.faults.append((window.fault, "\(try rig.witness(from: window.start, to: window.end))")) }
        summary.duration = DemoClock.now() - pacing.started
        return summary
    }
}
