import Foundation
import Glibc
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing

@testable import ChatNodeKit

/// Collects the demo's narration from its threads.
final class Lines: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var lines: [String] = []
    init() { pthread_mutex_init(&mutex, nil) }
    func append(_ line: String) {
        pthread_mutex_lock(&mutex)
        lines.append(line)
        pthread_mutex_unlock(&mutex)
    }
    var all: [String] {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return lines
    }
}

@Suite("chat-node demo")
struct ChatDemoTests {
    /// The README's main job, shortened (0.3 s of downtime, 3 s of silence): it must stay clean.
    @Test(
        "the demo ends clean: nothing lost or duplicated, the crash and the silent link noticed, a timeline written whose messages flow from loop to loop and whose connections are named by who they serve"
    )
    func demoIsClean() throws {
        let lines = Lines()
        let timeline = "/tmp/chat-node-demo-test-\(getpid()).html"
        let tracePath = ChatDemo.tracePath(besideTimeline: timeline)
        defer {
            unlink(timeline)
            unlink(tracePath)
        }
        var options = ChatDemo.Options(timelinePath: timeline) { lines.append($0) }
        options.downtime = .milliseconds(300)
        options.silence = .seconds(3)
        options.stepLimit = .seconds(90)
        let summary: ChatDemo.Summary
        do {
            summary = try ChatDemo.run(options)
        } catch {
            Issue.record("\(error); the narration:\n\(lines.all.joined(separator: "\n"))")
            return
        }
        #expect(summary.isClean, "\(summary)")
        #expect(summary.sent == 11 && summary.delivered == 11 && summary.failed == 0)
        #expect(summary.expectedDeliveries == summary.receivedDeliveries && summary.lost == 0 && summary.duplicatesShown == 0)
        #expect(summary.crashNoticed.count == 3 && summary.backAfterRestart.count == 3)
        let silence = try #require(summary.silenceNoticed)
        #expect(silence >= .seconds(1) && silence <= .seconds(3), "heartbeat 1 s + answer timeout 1.5 s, measured \(silence)")
        let text = lines.all.joined(separator: "\n")
        #expect(text.contains("no answer for 1.5 s (ping-pong timeout)"))
        #expect(text.contains("reconnecting in"))
        #expect(text.contains("→ resent \"carol writes into the silence (no ack will come)\" (attempt 2)"), "named by its text")
        #expect(!text.contains("resent message "), "the story never numbers its messages")
        #expect(text.contains("a throw-away node on a random port, gone with its accounts when the demo ends"))
        #expect("\(summary)".contains("heartbeat 1 s + 1.5 s = 2.5 s"), "\(summary)")
        let file = try #require(fopen(timeline, "r"))
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 4096)
        let read = fread(&buffer, 1, 4095, file)
        let head = String(decoding: buffer.prefix(read).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #expect(head.hasPrefix("<!DOCTYPE html>") && head.contains("id=\"timeline-data\""))

        #expect(tracePath == "/tmp/chat-node-demo-test-\(getpid()).trace.json")
        let trace = try ChromeTraceReading(json: String(contentsOfFile: tracePath, encoding: .utf8))
        #expect(trace.problems.isEmpty, "\(trace.problems.prefix(5))")
        #expect(trace.crossingSlices.isEmpty, "\(trace.crossingSlices.prefix(5))")
        for lane in ["the node", "the node, restarted", "alice's loop", "bob's loop", "carol's loop", "carol's link"] {
            #expect(trace.thread(named: lane) != nil && trace.thread(named: lane + " · events") != nil, "no lane \(lane)")
        }
        func marks(on lane: String) -> Set<String> {
            let thread = trace.thread(named: lane + " · events")
            return Set(trace.instants.filter { $0.thread == thread }.map(\.name) + trace.asyncSlices.filter { $0.thread == thread }.map(\.name))
        }
        #expect(
            ["connected", "heartbeat", "SEND", "SEND_ACK", "DELIVER", "reconnect 1", "reconnected", "offline"].allSatisfy(
                marks(on: "alice's loop").contains), "\(marks(on: "alice's loop"))")
        #expect(["ping timeout", "link silent"].allSatisfy(marks(on: "carol's loop").contains), "\(marks(on: "carol's loop"))")
        #expect(marks(on: "the node").isSuperset(of: ["node started", "node down"]) && marks(on: "the node, restarted").contains("node restarted"))
        let hops = Set(trace.flows.map { "\($0.name): \(trace.threadNames[$0.fromThread] ?? "?") → \(trace.threadNames[$0.toThread] ?? "?")" })
        #expect(
            [
                "SEND alice: alice's loop · events → the node · events", "SEND_ACK alice: the node · events → alice's loop · events",
                "DELIVER bob: the node · events → bob's loop · events", "DELIVER_ACK bob: bob's loop · events → the node · events"
            ].allSatisfy(hops.contains), "\(hops.sorted().prefix(12))")
        let ports = Set(trace.slices.map(\.name).filter { $0.hasPrefix("P:") })
        let named = ["P:alice ↔ node", "P:node ↔ alice", "P:node ↔ bob", "P:carol ↔ link", "P:link ↔ node for carol"]
        #expect(named.allSatisfy(ports.contains), "\(ports)")
        #expect(!ports.contains { $0.hasPrefix("P:tcp read") || $0.hasPrefix("P:tcp write") }, "named by a descriptor: \(ports)")
        let down = try #require(trace.asyncSlices.first { $0.name == "node down" })
        #expect(down.end - down.start >= 300_000, "the node stays down 0.3 s")
        let silent = try #require(trace.asyncSlices.first { $0.name == "link silent" && $0.thread == trace.thread(named: "carol's loop · events") })
        #expect(silent.end - silent.start >= 3_000_000, "the link is silent 3 s")
    }
}

@Suite("chat-node demo: the narration")
struct ChatDemoNarrationTests {
    @Test("a link that closes before its login was answered says it never reached the node, not that a connection was lost")
    func beforeLogin() {
        #expect(
            DemoParticipant.beforeLogin(.transport(.failed(.reset)))
                == "the link opened, then failed before the login was answered (connection reset by peer)")
        #expect(DemoParticipant.beforeLogin(.transport(.peerClosed)) == "the link opened, then closed before the login was answered")
        #expect(DemoParticipant.beforeLogin(.loginTimeout) == "login timed out")
    }

    @Test("the silent link's bound adds up: the answer timeout for a message, heartbeat + answer timeout when idle")
    func silenceArithmetic() {
        let bound = ChatDemo.Summary.silenceBound
        #expect(DemoParticipant.heartbeat == .seconds(1) && DemoParticipant.answerTimeout == .milliseconds(1500))
        #expect(bound.contains("within the answer timeout, 1.5 s") && bound.contains("heartbeat 1 s + 1.5 s = 2.5 s"), "\(bound)")
    }
}
