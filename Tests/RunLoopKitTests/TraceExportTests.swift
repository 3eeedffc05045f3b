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
        let trace = try ChromeTraceReading(json: recorder.chromeTraceJSON())
        #expect(!trace.slices.isEmpty && !trace.instants.isEmpty)
        #expect(trace.problems.isEmpty, "\(trace.problems)")
        #expect(trace.crossingSlices.isEmpty, "\(trace.crossingSlices)")
        let outerCallout = try #require(trace.slices.first { $0.name == "T:outer \"quoted\"" })
        let innerRun = try #require(trace.slices.first { $0.name == "run Inner" })
        #expect(outerCallout.start <= innerRun.start && innerRun.end <= outerCallout.end, "the nested run sits inside its callout")
        #expect(outerCallout.end - outerCallout.start == 8000, "1 ms of work, 5 ms asleep, 2 ms in the inner timer")
    }

    /// Two loops on one manual clock (the second recorder marks on the first's loop), one with a
    /// heartbeat mark and an outage span that crosses its sleeps.
    @Test(
        "several loops in one Chrome trace: a named thread per loop and one for its marks, the marks' labels and details, every slice non-negative and nested"
    )
    func chromeTraceOfSeveralLanes() async throws {
        let (loopLane, markedLane) = try await onManualClockLoop { loop, clock in
            let recorder = ActivityRecorder(), marked = ActivityRecorder()
            recorder.attach(to: loop, modes: ["M"])
            marked.attach(to: loop, modes: ["Unused"])
            var outage: ActivityRecorder.Span?
            loop.add(
                RunLoopTimer(after: .milliseconds(10), label: "heartbeat timer") { _ in
                    clock.advance(by: .milliseconds(1))
                    marked.mark("heartbeat", detail: "sent HEARTBEAT")
                    outage = marked.beginSpan("node down")
                }, forMode: "M")
            loop.add(RunLoopTimer(after: .milliseconds(30), label: "later") { _ in if let outage { marked.endSpan(outage) } }, forMode: "M")
            try loop.run("M", timeout: .milliseconds(40))
            recorder.detach()
            marked.detach()
            return (recorder, marked)
        }
        let json = ChromeTrace.render(
            title: "two loops", lanes: [(name: "alice's loop", recorder: loopLane), (name: "the node", recorder: markedLane)],
            markers: [(at: loopLane.events[0].time, label: "start")])
        let trace = try ChromeTraceReading(json: json)
        #expect(trace.problems.isEmpty, "\(trace.problems)")
        #expect(trace.crossingSlices.isEmpty, "\(trace.crossingSlices)")
        let alice = try #require(trace.thread(named: "alice's loop"))
        let nodeEvents = try #require(trace.thread(named: "the node · events"))
        #expect(Set(trace.threadNames.values) == ["alice's loop", "alice's loop · events", "the node", "the node · events"])
        #expect(trace.slices.contains { $0.thread == alice && $0.name == "T:heartbeat timer" && $0.end - $0.start == 1000 })
        #expect(trace.slices.contains { $0.thread == alice && $0.name == "sleep" })
        let heartbeat = try #require(trace.instants.first { $0.name == "heartbeat" })
        #expect(heartbeat.thread == nodeEvents && heartbeat.detail == "sent HEARTBEAT")
        #expect(heartbeat.time == 11_000, "10 ms to the timer, 1 ms inside it")
        let down = try #require(trace.asyncSlices.first { $0.name == "node down" })
        #expect(down.thread == nodeEvents && down.start == 11_000 && down.end == 30_000)
        #expect(trace.instants.contains { $0.name == "start" && $0.time == 0 })
    }

    @Test(
        "marks: an instant at the loop's now or a given time, a span ended once and never before it began, a span begun before a reset not ended after it"
    )
    func marksAndSpans() async throws {
        let (recorder, start, afterReset) = try await onManualClockLoop { loop, clock in
            let recorder = ActivityRecorder()
            recorder.attach(to: loop)
            let start = loop.now
            recorder.mark("connected")
            let offline = recorder.beginSpan("offline", detail: "ping timeout")
            clock.advance(by: .milliseconds(5))
            recorder.endSpan(offline)
            clock.advance(by: .milliseconds(5))
            recorder.endSpan(offline)  // a second end changes nothing
            recorder.mark("given time", at: start + .seconds(1))
            recorder.endSpan(recorder.beginSpan("clamped"), at: start)

            let fresh = ActivityRecorder()
            fresh.attach(to: loop)
            let stale = fresh.beginSpan("before reset")
            fresh.reset()
            fresh.beginSpan("after reset")
            fresh.endSpan(stale)
            return (recorder, start, fresh.marks)
        }
        let marks = recorder.marks
        #expect(marks.map(\.label) == ["connected", "offline", "given time", "clamped"])
        #expect(!marks[0].isSpan && marks[0].time == start && marks[0].end == nil)
        #expect(marks[1].isSpan && marks[1].detail == "ping timeout" && marks[1].end == start + .milliseconds(5))
        #expect(!marks[2].isSpan && marks[2].time == start + .seconds(1))
        #expect(marks[3].time == start + .milliseconds(10) && marks[3].end == marks[3].time)
        #expect(afterReset.map(\.label) == ["after reset"] && afterReset[0].end == nil, "a stale span does not end a fresh one")
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
