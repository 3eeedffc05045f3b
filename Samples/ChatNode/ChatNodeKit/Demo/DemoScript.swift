import Foundation
import Glibc
import Logging
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite
import RunLoopKit

/// The demo's script, run on the calling (main) thread; every actor lives on its own ``HostedLoop``.
final class DemoScript {
    private let options: ChatDemo.Options
    private let pacing: DemoPacing
    private var started: LoopInstant { pacing.started }
    private let databasePath = "/tmp/chat-node-demo-\(getpid()).db"
    private var nodeHost: HostedLoop?
    private var node: LoopBound<ChatNode>?
    private var doors: LoopBound<NodeDoors>?
    /// Each person's door into the node: any free port at the first start, the same after the crash.
    private var doorPorts: [String: UInt16] = [:]
    private var nodeRecorders: [ActivityRecorder] = []
    private var port: UInt16 = 0
    /// The page's port: any free one at the first start, the same one after the crash.
    private var webPort: UInt16 = 0
    private let linkHost = HostedLoop(name: "link")
    private let linkRecorder = ActivityRecorder()
    private var link: LoopBound<FaultyLink>?
    private let people = DemoCast()
    private var markers: [(at: LoopInstant, label: String)] = []

    init(_ options: ChatDemo.Options) {
        self.options = options
        pacing = DemoPacing(output: options.output, stepLimit: options.stepLimit)
    }

    func play() throws -> ChatDemo.Summary {
        var summary = ChatDemo.Summary()
        pacing.section("A chat node and three clients, each on a run loop of its own thread")
        try startNode(port: 0)
        let carolsDoor = doorPorts["carol"] ?? 0
        link = try linkHost.sync { [linkRecorder] in
            linkRecorder.attach(to: RunLoop.current)
            return LoopBound(try FaultyLink(targetPort: carolsDoor, naming: "carol"))
        }
        let linkPort = try linkHost.sync { [link] in link!.value.port }
        let ways = [("alice", doorPorts["alice"] ?? 0, "node"), ("bob", doorPorts["bob"] ?? 0, "node"), ("carol", linkPort, "link")]
        for (name, target, peer) in ways {
            let narrate = pacing.narrator(name)
            try people.add(name) { DemoParticipant(name: name, port: target, reaching: peer, narrate: narrate) }
        }
        pacing.note("carol reaches the node through a link that can go silent (a relay on its own loop)")
        try pacing.waitUntil("everyone online") { try self.all { $0.isOnline } }
        for index in people.indices { try on(index) { $0.join("lobby") } }
        try pacing.pause(.milliseconds(300))

        pacing.section("Chatting")
        try on(0) { try $0.say("hello lobby", to: .room("lobby")) }
        try on(1) { try $0.say("hi alice!", to: .room("lobby")) }
        try on(2) { try $0.say("carol here", to: .room("lobby")) }
        try on(0) { try $0.say("carol, a private word", to: .user("carol")) }
        try settle()

        pacing.section("The node crashes: every connection reset, back in \(formatDemoSeconds(options.downtime))")
        try on(0) { try $0.say("sent just before the crash", to: .room("lobby")) }
        let crash = mark("node crash")
        let crashed = nodeRecorders.last
        let down = crashed?.beginSpan("node down", detail: "crashed: every connection reset", at: crash)
        try crashNode()
        try pacing.waitUntil("clients notice the crash") { try self.all { !$0.isOnline } }
        try on(0) { try $0.say("anyone there?", to: .room("lobby")) }
        try on(1) { try $0.say("bob to carol, while the node is down", to: .user("carol")) }
        try pacing.pause(options.downtime)
        let restart = mark("node restarted")
        if let down { crashed?.endSpan(down, at: restart) }
        try startNode(port: port)
        try pacing.waitUntil("everyone back online") { try self.all { $0.isOnline } }
        try settle()
        for (index, name) in ["alice", "bob", "carol"].enumerated() {
            let (noticed, back) = try on(index) { person -> (LoopInstant?, LoopInstant?) in
                (person.disconnects.first { $0.at >= crash }?.at, person.onlineAt.first { $0 >= restart })
            }
            summary.crashNoticed[name] = noticed.map { $0 - crash }
            summary.backAfterRestart[name] = back.map { $0 - restart }
        }

        pacing.section("carol's link goes silent for \(formatDemoSeconds(options.silence)): TCP stays open, nothing passes")
        let silence = mark("carol's link silent")
        let silent = try silenceSpans(at: silence)
        try linkHost.sync { [link] in link!.value.isSilent = true }
        try on(2) { try $0.say("carol writes into the silence (no ack will come)", to: .room("lobby")) }
        try on(0) { try $0.say("carol, are you there?", to: .user("carol")) }
        try on(1) { try $0.say("lobby news carol will get later", to: .room("lobby")) }
        try pacing.waitUntil("carol notices the silence") { try self.on(2) { $0.disconnects.contains { $0.at >= silence } } }
        summary.silenceNoticed = try on(2) { $0.disconnects.first { $0.at >= silence }?.at }.map { $0 - silence }
        try on(2) { try $0.say("carol writes while reconnecting", to: .room("lobby")) }
        try pacing.pause(options.silence - (DemoClock.now() - silence))
        let healed = mark("carol's link back")
        for (recorder, span) in silent { recorder.endSpan(span, at: healed) }
        try linkHost.sync { [link] in link!.value.isSilent = false }
        try pacing.waitUntil("carol back online") { try self.on(2) { $0.onlineAt.contains { $0 >= healed } } }
        summary.backAfterSilence = try on(2) { $0.onlineAt.first { $0 >= healed } }.map { $0 - healed }
        try settle()

        pacing.section("Logging out")
        for index in people.indices { try on(index) { $0.client.close() } }
        try pacing.waitUntil("everyone closed") { try self.all { if case .closed = $0.client.state { return true } else { return false } } }
        try count(into: &summary)
        summary.duration = DemoClock.now() - started
        if let path = options.timelinePath { try writeTimeline(to: path) }
        return summary
    }

    func tearDown() {
        people.stop()
        try? linkHost.sync { [link] in link?.value.close() }
        linkHost.stop()
        if let nodeHost {
            try? nodeHost.sync { [node] in node?.value.abort() }
            nodeHost.stop()
        }
        for suffix in ["", "-wal", "-shm"] { unlink(databasePath + suffix) }
    }

    // MARK: Node

    private func startNode(port: UInt16) throws {
        let host = HostedLoop(name: "node")
        var configuration = ChatNode.Configuration(databasePath: databasePath)
        configuration.port = port
        configuration.httpPort = webPort
        configuration.passwordHasher = PasswordHasher(rounds: 1 << 12)
        let narrate = pacing.narrator("node")
        let recorder = ActivityRecorder()
        let doorPorts = self.doorPorts
        let (started, opened) = try host.sync { () throws -> (LoopBound<ChatNode>, LoopBound<NodeDoors>) in
            recorder.attach(to: RunLoop.current)
            recorder.mark(port == 0 ? "node started" : "node restarted", detail: "a fresh node on its own loop")
            var logger = Logger(label: "chat-node")
            logger.logLevel = .critical
            let node = try ChatNode(configuration: configuration, logger: logger)
            node.onEvent = narrate
            try node.start()
            let people = ["alice", "bob", "carol"].map { ($0, doorPorts[$0] ?? 0) }
            return (LoopBound(node), LoopBound(try NodeDoors(people: people, server: node.server, recorder: recorder)))
        }
        self.doorPorts = try host.sync { opened.value.ports }
        doors = opened
        self.port = try host.sync { started.value.port }
        let page = try host.sync { started.value.pageURL }
        webPort = try host.sync { started.value.webPort ?? 0 }
        nodeHost = host
        node = started
        nodeRecorders.append(recorder)
        guard let page else { return pacing.narrator("node")("listening on 127.0.0.1:\(self.port)") }
        if port != 0 { return pacing.narrator("node")("listening again on 127.0.0.1:\(self.port); an open page reconnects by itself") }
        pacing.narrator("node")(
            "listening on 127.0.0.1:\(self.port); page \(page) — to watch, open it now and log in with any new name and password: "
                + "a throw-away node on a random port, gone with its accounts when the demo ends")
    }

    private func crashNode() throws {
        guard let host = nodeHost, let node else { return }
        try host.sync { [doors] in
            doors?.value.close()
            node.value.onEvent = nil  // a crashed process says nothing more
            node.value.abort()
            node.value.sqliteStore?.database.close()
        }
        host.stop()
        nodeHost = nil
        self.node = nil
        doors = nil
    }

    // MARK: Counting

    private func count(into summary: inout ChatDemo.Summary) throws {
        let names = people.names
        for (index, name) in names.enumerated() { summary.reconnects[name] = try on(index) { max(0, $0.onlineAt.count - 1) } }
        summary.messages = DeliveryTally(records: try people.records()) { _ in names }
    }

    // MARK: Timeline

    /// Carol's silence as a span on her loop's lane and on the link's, from `start` until it heals.
    private func silenceSpans(at start: LoopInstant) throws -> [(ActivityRecorder, ActivityRecorder.Span)] {
        let carol = try on(2) { $0.recorder }
        let detail = "the link drops every byte both ways; TCP stays open"
        return [carol, linkRecorder].map { ($0, $0.beginSpan("link silent", detail: detail, at: start)) }
    }

    /// The timeline as a page and, beside it, as Chrome-trace JSON (`NAME.trace.json` for `NAME.html`)
    /// for Perfetto.
    private func writeTimeline(to path: String) throws {
        var lanes: [(name: String, recorder: ActivityRecorder)] = []
        for (index, recorder) in nodeRecorders.enumerated() { lanes.append((index == 0 ? "the node" : "the node, restarted", recorder)) }
        for (index, name) in ["alice", "bob", "carol"].enumerated() {
            lanes.append(("\(name)'s loop", try on(index) { $0.recorder }))
        }
        lanes.append(("carol's link", linkRecorder))
        let title = "chat-node demo: the run loops at work"
        let hiding: Set<String> = [HostedLoop.probeLabel]
        let tracePath = ChatDemo.tracePath(besideTimeline: path)
        try write(TimelineHTML.render(title: title, lanes: lanes, markers: markers, hiding: hiding), to: path)
        try write(ChromeTrace.render(title: title, lanes: lanes, markers: markers, hiding: hiding), to: tracePath)
        options.output("timeline written to \(path) (open it in a browser), and for Perfetto to \(tracePath)")
    }

    private func write(_ text: String, to path: String) throws {
        guard let file = fopen(path, "w") else { throw ChatDemo.Failure.stuck("cannot write \(path)") }
        fputs(text, file)
        fclose(file)
    }

    // MARK: Helpers

    private func on<T>(_ index: Int, _ body: @escaping (DemoParticipant) throws -> T) throws -> T {
        try people.on(index, body)
    }

    private func all(_ condition: @escaping (DemoParticipant) -> Bool) throws -> Bool {
        try people.all(condition)
    }

    /// Waits until every own message of everyone is settled and every acknowledged one has reached each
    /// of its recipients — deliveries trail acknowledgements, by more than any fixed pause on a loaded
    /// machine. A delivery still missing after the step limit stays missing: the summary counts it lost.
    private func settle() throws {
        try pacing.waitUntil("every message settled") { try self.all { $0.unsettled == 0 } }
        _ = try pacing.wait(upTo: options.stepLimit) { try missingDeliveries() == 0 }
        try pacing.pause(.milliseconds(100))  // let the last deliveries print
    }

    private func missingDeliveries() throws -> Int {
        var probe = ChatDemo.Summary()
        try count(into: &probe)
        return probe.lost
    }

    private func mark(_ label: String) -> LoopInstant {
        let now = DemoClock.now()
        markers.append((now, label))
        return now
    }
}

/// The demo's clock: CLOCK_MONOTONIC, the same clock every loop uses, so marks and loop times compare.
enum DemoClock {
    static func now() -> LoopInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return LoopInstant(nanoseconds: UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec))
    }
}
