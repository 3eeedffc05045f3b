import Foundation
import RunLoopKit
import RunLoopTesting
import Testing

/// The exports are read back with Foundation's JSON parser; this file qualifies `RunLoopKit.RunLoop`
/// because Foundation has a `RunLoop` too.
@Suite struct TraceExportTests {
    private func recordNestedRun() async throws -> ActivityRecorder {
        try await onManualClockLoop { loop, clock in
            let recorder = ActivityRecorder()
            recorder.attach(to: loop, modes: ["Outer", "Inner"])
            loop.add(
                RunLoopTimer(after: .milliseconds(10), label: "outer \"quoted\"") { _ in
                    clock.advance(by: .milliseconds(1))
                    loop.add(
                        RunLoopTimer(after: .milliseconds(5), label: "inner") { _ in
                            clock.advance(by: .milliseconds(2))
                        }, forMode: "Inner")
                    _ = try? loop.run("Inner", timeout: .seconds(1))
                }, forMode: "Outer")
            try loop.run("Outer", timeout: .seconds(1))
            recorder.detach()
            return recorder
        }
    }

    @Test func chromeTraceIsValidJSONWhoseSpansNest() async throws {
        let recorder = try await recordNestedRun()
        let json = recorder.chromeTraceJSON()
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        let events = try #require(object?["traceEvents"] as? [[String: Any]])
        #expect(!events.isEmpty)

        // Turn B/E pairs and X events into intervals (µs), then check any two are disjoint or nested.
        var intervals: [(name: String, start: Double, end: Double)] = []
        var open: [(String, Double)] = []
        for event in events {
            let phase = event["ph"] as? String
            let name = event["name"] as? String ?? ""
            guard let ts = event["ts"] as? Double else {
                Issue.record("event without a numeric ts: \(event)")
                continue
            }
            switch phase {
            case "B": open.append((name, ts))
            case "E":
                guard let (openName, start) = open.popLast() else {
                    Issue.record("E without B: \(name)")
                    continue
                }
                #expect(openName == name)
                intervals.append((name, start, ts))
            case "X": intervals.append((name, ts, ts + (event["dur"] as? Double ?? 0)))
            default: break
            }
        }
        #expect(open.isEmpty)
        for a in intervals {
            for b in intervals where a.start < b.start && b.start < a.end {
                #expect(b.end <= a.end, "\(b.name) starts inside \(a.name) but ends after it")
            }
        }
        let outerCallout = try #require(intervals.first { $0.name == "T:outer \"quoted\"" })
        let innerRun = try #require(intervals.first { $0.name == "run Inner" })
        #expect(outerCallout.start <= innerRun.start && innerRun.end <= outerCallout.end, "the nested run sits inside its callout")
        #expect(outerCallout.end - outerCallout.start == 8000, "1 ms of work, 5 ms asleep, 2 ms in the inner timer")
    }

    @Test func timelineShowsOneLinePerEventIndentedByDepth() async throws {
        let recorder = try await recordNestedRun()
        let all = recorder.timeline().split(separator: "\n")
        let legend = all.prefix { $0.hasPrefix("#") }
        #expect(legend.count == ActivityRecorder.tokenLegend.split(separator: "\n").count)
        #expect(legend.contains { $0.contains("BW before waiting") } && legend.contains { $0.contains("P:port source") })
        let lines = all.dropFirst(legend.count)
        #expect(lines.count == recorder.events.count)
        let inner = try #require(lines.first { $0.contains("T:inner") })
        #expect(inner.contains("  [Inner] #1  T:inner  (0.002000000s)"))
        #expect(lines.first?.hasPrefix("+0.000000000s  [Outer] #0  E") == true)
    }
}
