import Foundation
import Glibc
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import ThrowawayServers

/// A cluster on this machine for `chat-node demo --cluster` and the chaos tests — one harness for
/// both: a throw-away PostgreSQL and Redis, `chat-node migrate`, `chat-node serve` node processes,
/// and chat clients each on a loop of its own, spread over the nodes; the faults (a node killed,
/// Redis restarted or cut off or asleep, PostgreSQL stopped) and what the clients saw of them.
///
/// Script thread only (the demo command's main thread, or a test's): ``start()``, the faults and
/// the counts block it while the clients run on their loops. ``tearDown()`` ends every process and
/// removes every temporary directory, whatever state a failure or a Ctrl-C left.
final class ClusterRig {
    struct User {
        var name: String
        /// The index of the node it first connects to.
        var home: Int
        /// Sends a line every ``Settings/chatInterval`` while the traffic runs.
        var chats = true
        /// Reconnects to the next node when its connection ends; a user that does not stays away
        /// from a dead node (it keeps retrying it) until ``ClusterRig/release(_:)``.
        var failsOver = true
    }

    struct Settings {
        /// The `chat-node` executable the nodes run.
        var nodeExecutable: String
        var nodeCount = 3
        var users: [User]
        /// Every user joins it; chatting users send to it and directly to users of other nodes.
        var room = "lobby"
        /// The nodes' lease period (`serve --lease-seconds`): how soon a dead node's users go offline.
        var lease = defaultLease
        /// Short, for a demo and tests that wait for a dead node's users to go offline; long enough
        /// for a node busy on a loaded machine to refresh it (every second).
        static let defaultLease: Duration = .seconds(3)
        var chatInterval: Duration = .milliseconds(200)
        /// The node (an index) that reaches Redis over TCP through a relay that can go silent
        /// (``ClusterRig/cutFromRedis(_:)``) instead of the unix socket; `nil`: none.
        var relayedNode: Int?

        init(nodeExecutable: String, users: [User]) {
            self.nodeExecutable = nodeExecutable
            self.users = users
        }

        /// `names`, in turn on each of `nodes` nodes.
        static func spread(_ names: [String], over nodes: Int) -> [User] {
            names.enumerated().map { User(name: $0.element, home: $0.offset % nodes) }
        }
    }

    struct Node {
        let id: String
        let port: UInt16
        /// Its standard error: the node's log, shown when something goes wrong.
        let log: String
        var process: ServerProcess?
    }

    /// What the clients saw of a fault between two instants, for the fault's line in the summary.
    struct Witness: CustomStringConvertible {
        /// Users whose connection ended, with how long until they were online again (and where).
        var reconnected: [(user: String, after: Duration?, node: String)] = []
        /// Own messages sent in the window.
        var messages = 0
        /// The longest a message sent in the window took to be shown to one of its recipients.
        var slowest: Duration?
        /// Messages sent again after a lost or refused attempt.
        var resends = 0

        var description: String {
            var parts: [String] = []
            if reconnected.isEmpty {
                parts.append("no client disconnected")
            } else {
                parts.append(
                    reconnected.map { "\($0.user) back on \($0.node) after \($0.after.map(formatDemoSeconds) ?? "—")" }.joined(separator: ", "))
            }
            parts.append("\(messages) messages sent meanwhile, slowest shown after \(slowest.map(formatDemoSeconds) ?? "—")")
            parts.append("\(resends) resent")
            return parts.joined(separator: "; ")
        }
    }

    let settings: Settings
    let pacing: DemoPacing
    let cast = DemoCast()
    private(set) var postgres: PostgresServer?
    private(set) var redis: RedisServer?
    private(set) var nodes: [Node] = []
    /// The relay of ``Settings/relayedNode`` to Redis, on a loop of its own.
    private var relay: (host: HostedLoop, link: LoopBound<FaultyLink>, port: UInt16)?
    /// Which node each client uses; read on that client's loop (its connector runs there).
    private var rotations: [NodeRotation] = []
    /// The nodes' logs.
    private let directory = temporaryPath("cluster-demo")
    private var isTornDown = false

    init(settings: Settings, pacing: DemoPacing) {
        self.settings = settings
        self.pacing = pacing
    }

    // MARK: Starting

    /// Starts the servers, migrates the schema, starts the nodes and the clients, and waits until
    /// every client is online and in the room.
    func start() throws {
        let narrate = pacing.narrator("rig")
        guard mkdir(directory, 0o700) == 0 else { throw ChatDemo.Failure.stuck("mkdir \(directory): \(String(cString: strerror(errno)))") }
        let postgres = try PostgresServer.startBlocking()
        self.postgres = postgres
        narrate("PostgreSQL started (throw-away, unix socket in \(postgres.socketDirectory))")
        let redis = try RedisServer.start(tcp: settings.relayedNode != nil)
        self.redis = redis
        narrate("Redis started (throw-away, \(redis.socketPath))")
        if settings.relayedNode != nil {
            let host = HostedLoop(name: "relay")
            let link = try host.sync { LoopBound(try FaultyLink(targetPort: redis.tcpPort)) }
            relay = (host, link, try host.sync { link.value.port })
        }
        let migrate = try runCommand([settings.nodeExecutable, "migrate", "--postgres", postgres.url, "--log-level", "error"])
        guard migrate.status == 0 else { throw ChatDemo.Failure.stuck("chat-node migrate: \(migrate.output)\(migrate.errorOutput)") }
        narrate("chat-node migrate: \(migrate.output.trimmingCharacters(in: .whitespacesAndNewlines))")
        for index in 0..<settings.nodeCount { try startNode(index) }
        for user in settings.users { try addClient(user) }
        try pacing.waitUntil("every client online") { try self.cast.all { $0.isOnline } }
        for index in cast.indices { try cast.on(index) { [room = settings.room] in $0.join(room) } }
        try pacing.waitUntil("every client in #\(settings.room)") { try self.cast.all { $0.joinedRooms.contains(self.settings.room) } }
    }

    private func startNode(_ index: Int) throws {
        guard let postgres, let redis else { return }
        let id = "n\(index + 1)"
        let log = "\(directory)/\(id).log"
        let seconds = Double(settings.lease.components.seconds) + Double(settings.lease.components.attoseconds) / 1e18
        let arguments = [
            "serve", "--postgres", Self.durable(postgres), "--redis", redisURL(for: index, redis), "--port", "0", "--no-http", "--node-id", id,
            "--lease-seconds", "\(seconds)", "--scrypt-cost", "4", "--log-level", "warning"
        ]
        let process: ServerProcess
        do {
            process = try ServerProcess(executable: settings.nodeExecutable, arguments, errorLog: log)
        } catch {
            throw ChatDemo.Failure.stuck("node \(id) did not start: \(error); its log:\n\(Self.read(log))")
        }
        nodes.append(Node(id: id, port: process.port, log: log, process: process))
        pacing.narrator(id)("chat-node serve: listening on 127.0.0.1:\(process.port), pid \(process.process.processIdentifier)")
    }

    /// The server's URL with commits synchronous for the nodes: the throw-away server trades
    /// durability for speed (`synchronous_commit = off`), and `pg_ctl stop -m immediate` would then
    /// take the last acknowledged messages with it — a loss of the test server's making, which would
    /// hide the nodes' own.
    private static func durable(_ postgres: PostgresServer) -> String {
        postgres.url + "&options=-c%20synchronous_commit%3Don"
    }

    /// The unix socket, or for the relayed node the relay's port.
    private func redisURL(for index: Int, _ redis: RedisServer) -> String {
        guard index == settings.relayedNode, let relay else { return "unix://\(redis.socketPath)" }
        return "redis://127.0.0.1:\(relay.port)"
    }

    private func addClient(_ user: User) throws {
        let rotation = NodeRotation(nodes: nodes.map { ($0.id, $0.port) }, home: user.home, failsOver: user.failsOver)
        rotations.append(rotation)
        let narrate = pacing.narrator(user.name)
        try cast.add(user.name) {
            DemoParticipant(name: user.name, connector: rotation.connector, maximumSendAttempts: 100, narratesTraffic: false, narrate: narrate)
        }
    }

    // MARK: Traffic

    /// Every chatting user sends a line every ``Settings/chatInterval``: to the room, then in turn
    /// directly to each chatting user whose home is another node.
    func startTraffic() throws {
        for (index, user) in settings.users.enumerated() where user.chats {
            let peers = settings.users.filter { $0.chats && $0.home != user.home }.map(\.name)
            try cast.on(index) { [settings] in $0.startChatting(every: settings.chatInterval, room: settings.room, peers: peers) }
        }
    }

    /// Stops the traffic and waits until every message is settled and every acknowledged one shown
    /// to each of its recipients (or the step limit passed: the tally then counts what is missing).
    func settle() throws {
        for index in cast.indices { try cast.on(index) { $0.stopChatting() } }
        try pacing.waitUntil("every message settled") { try self.cast.all { $0.unsettled == 0 } }
        _ = try pacing.wait(upTo: pacing.stepLimit) { try self.tally().lost == 0 }
    }

    /// What became of every message so far.
    func tally() throws -> DeliveryTally {
        try DeliveryTally(records: cast.records()) { [users = settings.users] _ in users.map(\.name) }
    }

    // MARK: Faults

    /// SIGKILL to node `index`: its clients' connections reset, its lease lapses.
    func killNode(_ index: Int) {
        nodes[index].process?.kill()
        nodes[index].process = nil
    }

    /// Lets `user`, stuck on a dead home node, reconnect to another one.
    func release(_ user: String) throws {
        guard let index = cast.names.firstIndex(of: user) else { return }
        let rotation = rotations[index]
        try cast.on(index) { _ in rotation.failsOver = true }
    }

    /// Kills Redis and starts an empty one on the same socket: every node's connections end, the
    /// streams and leases are gone.
    func restartRedis() throws {
        try redis?.restart()
    }

    /// One command to Redis on a connection of its own (`CLIENT KILL TYPE normal`, …); its answer.
    @discardableResult
    func redisCommand(_ arguments: [String]) throws -> String {
        guard let redis else { return "" }
        let result = try redis.command(arguments)
        guard result.status == 0 else { throw ChatDemo.Failure.stuck("redis-cli \(arguments.joined(separator: " ")): \(result.errorOutput)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Makes the relayed node's path to Redis drop everything both ways (`true`: as a firewall's DROP
    /// would, connections stay open, nothing passes) or pass again.
    func cutFromRedis(_ cut: Bool) throws {
        guard let relay else { return }
        try relay.host.sync { relay.link.value.isSilent = cut }
    }

    /// `pg_ctl stop -m immediate`: every backend ends at once, nothing is checkpointed.
    func stopPostgres() {
        postgres?.stop()
    }

    func startPostgres() throws {
        try postgres?.restart()
    }

    // MARK: What the clients saw

    /// What the clients saw between `start` and `end`.
    func witness(from start: LoopInstant, to end: LoopInstant) throws -> Witness {
        var witness = Witness()
        var sentAt: [String: LoopInstant] = [:]  // "from\0id" → when
        var shown: [String: LoopInstant] = [:]  // "from\0id\0recipient" → first shown
        for (index, name) in cast.names.enumerated() {
            let rotation = rotations[index]
            let (sent, received, disconnects, onlineAt, resends, node) = try cast.on(index) { person in
                (person.sentAt, person.received, person.disconnects.map(\.at), person.onlineAt, person.resentAt, rotation.currentNode)
            }
            for (id, at) in sent where at >= start && at < end { sentAt[name + "\u{0}" + id] = at }
            for message in received {
                let key = message.from + "\u{0}" + message.id + "\u{0}" + name
                shown[key] = min(shown[key] ?? message.at, message.at)
            }
            witness.resends += resends.filter { $0 >= start && $0 < end }.count
            if let cut = disconnects.first(where: { $0 >= start && $0 < end }) {
                witness.reconnected.append((name, onlineAt.first { $0 > cut }.map { $0 - cut }, node))
            }
        }
        witness.messages = sentAt.count
        for (key, at) in shown {
            let message = String(key[..<key.lastIndex(of: "\u{0}")!])
            guard let sent = sentAt[message] else { continue }
            witness.slowest = max(witness.slowest ?? .zero, at - sent)
        }
        return witness
    }

    /// The presence changes of `user` that `watcher`'s client was told of since `start`.
    func presence(of user: String, seenBy watcher: String, since start: LoopInstant) throws -> [(at: LoopInstant, isOnline: Bool)] {
        guard let index = cast.names.firstIndex(of: watcher) else { return [] }
        return try cast.on(index) { person in
            person.presence.filter { $0.at >= start && $0.change.user == user }.map { ($0.at, $0.change.isOnline) }
        }
    }

    /// The node `user`'s client last connected to.
    func node(of user: String) throws -> String {
        guard let index = cast.names.firstIndex(of: user) else { return "-" }
        let rotation = rotations[index]
        return try cast.on(index) { _ in rotation.currentNode }
    }

    /// The nodes' logs, for a failure to print, each after how its node ended if it ended by itself.
    var logs: String {
        nodes.map { "== \($0.id)\(Self.unexpectedEnd(of: $0).map { " (\($0))" } ?? "")\n\(log(of: $0.id))" }.joined(separator: "\n")
    }

    /// The nodes that ended although no fault stopped them, with how. A node killed by a signal it
    /// does not handle (SIGPIPE, say) logs nothing: its clients only see their connections end.
    var unexpectedEnds: [String] {
        nodes.compactMap { node in Self.unexpectedEnd(of: node).map { "\(node.id) \($0)" } }
    }

    private static func unexpectedEnd(of node: Node) -> String? {
        guard let process = node.process?.process, !process.isRunning else { return nil }
        let how = process.terminationReason == .uncaughtSignal ? "signal \(process.terminationStatus)" : "status \(process.terminationStatus)"
        return "ended by itself: \(how)"
    }

    /// What node `id` logged so far (warnings and worse).
    func log(of id: String) -> String {
        nodes.first { $0.id == id }.map { Self.read($0.log) } ?? ""
    }

    // MARK: Ending

    /// Closes the clients, kills the nodes and the servers, removes the temporary directories. Safe
    /// after any failure and more than once.
    func tearDown() {
        guard !isTornDown else { return }
        isTornDown = true
        for index in cast.indices { try? cast.on(index) { $0.client.close() } }
        // Their goodbyes, briefly (not after a Ctrl-C: the wait ends at once).
        _ = try? pacing.wait(upTo: .seconds(2)) {
            try self.cast.all { if case .closed = $0.client.state { true } else { false } }
        }
        cast.stop()
        for index in nodes.indices { killNode(index) }
        if let relay {
            try? relay.host.sync { relay.link.value.close() }
            relay.host.stop()
        }
        redis = nil
        postgres = nil
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }
}

/// Which node a client connects to at each attempt: its home first; after that, when it fails over,
/// the next node in turn at every new attempt — a client's list of addresses, as a real one would
/// have. Lives on the client's loop (its connector runs there).
final class NodeRotation {
    private let nodes: [(id: String, port: UInt16)]
    private var index: Int
    private var attempts = 0
    var failsOver: Bool

    init(nodes: [(id: String, port: UInt16)], home: Int, failsOver: Bool) {
        self.nodes = nodes
        index = home
        self.failsOver = failsOver
    }

    var currentNode: String { nodes[index].id }

    /// The client's connector: a TCP link to this attempt's node.
    var connector: IMConnector {
        { [self] loop, modes, maximumFrameBody in
            if attempts > 0, failsOver { index = (index + 1) % nodes.count }
            attempts += 1
            let connect = TCPFrameLink.connector(host: "127.0.0.1", port: nodes[index].port, connectTimeout: .seconds(2))
            return connect(loop, modes, maximumFrameBody)
        }
    }
}
