import ChatNodeKit
import Glibc
import Testing

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
        #expect(text.contains("→ resent"))
        let file = try #require(fopen(timeline, "r"))
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 4096)
        let read = fread(&buffer, 1, 4095, file)
        let head = String(decoding: buffer.prefix(read).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #expect(head.hasPrefix("<!DOCTYPE html>") && head.contains("<svg"))
    }
}
