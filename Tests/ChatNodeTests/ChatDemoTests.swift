import Glibc
import RunLoopIMCore
import RunLoopKit
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
    @Test("the demo ends clean: nothing lost or duplicated, the crash and the silent link noticed, a timeline written")
    func demoIsClean() throws {
        let lines = Lines()
        let timeline = "/tmp/chat-node-demo-test-\(getpid()).html"
        defer { unlink(timeline) }
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
        #expect(head.hasPrefix("<!DOCTYPE html>") && head.contains("<svg"))
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
