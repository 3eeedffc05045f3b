import Foundation
import RunLoopKit
import RunLoopTesting
import Testing

/// What a timeline draws of a recording, on the manual clock. Foundation reads the page's JSON back;
/// it has a `RunLoop` too, hence `RunLoopKit.RunLoop`.
@Suite struct TimelineLaneTests {
    /// A 10 ms sleep ended by a 2 ms timer that runs a nested 1 ms timer, a sleep to an empty timer at
    /// 20 ms, then one to the 25 ms timeout (a timer at 30 ms keeps the mode alive); a "heartbeat"
    /// mark inside the first timer.
    private func record() async throws -> ActivityRecorder {
        try await onManualClockLoop { loop, clock in
            let recorder = ActivityRecorder()
            recorder.attach(to: loop, modes: ["M", "Nested"])
            loop.add(
                RunLoopTimer(after: .milliseconds(10), label: "tick") { _ in
                    recorder.mark("heartbeat", detail: "</script> in a detail")
                    clock.advance(by: .milliseconds(1))
                    loop.add(RunLoopTimer(after: .zero, label: "inner") { _ in clock.advance(by: .milliseconds(1)) }, forMode: "Nested")
                    _ = try? loop.run("Nested", timeout: .zero, returnAfterSourceHandled: true)
                }, forMode: "M")
            loop.add(RunLoopTimer(after: .milliseconds(20), label: "late") { _ in }, forMode: "M")
            loop.add(RunLoopTimer(after: .milliseconds(30), label: "never") { _ in }, forMode: "M")
            try loop.run("M", timeout: .milliseconds(25))
            recorder.detach()
            return recorder
        }
    }

    @Test("a lane: each sleep with what woke it (nothing for the timeout), callouts nested by level, wake-ups, busy % and the longest callout")
    func laneOfARecording() async throws {
        let recorder = try await record()
        let lane = TimelineLane(name: "alice's loop", events: recorder.events, marks: recorder.marks)
        let start = try #require(recorder.events.first?.time)
        let outerSleeps = lane.sleeps.filter { $0.end - $0.start >= .milliseconds(5) }
        #expect(outerSleeps.map { $0.end - $0.start } == [.milliseconds(10), .milliseconds(8), .milliseconds(5)])
        #expect(outerSleeps.map(\.wokenBy) == ["timer tick", "timer late", nil])
        let tick = try #require(lane.callouts.first { $0.name == "timer tick" })
        let inner = try #require(lane.callouts.first { $0.name == "timer inner" })
        #expect(tick.start == start + .milliseconds(10) && tick.duration == .milliseconds(2) && tick.level == 0)
        #expect(inner.level == 1 && inner.duration == .milliseconds(1))
        #expect(lane.summary.recorded == .milliseconds(25))
        #expect(lane.summary.busyFraction == 0.08, "2 ms of 25, the nested timer counted once")
        #expect(lane.summary.longest?.name == "timer tick")
        #expect(lane.summary.wakeUps == recorder.count(of: "AW") && lane.summary.wakeUps >= 3)
        #expect(lane.summary.wakeUpsPerSecond == Double(lane.summary.wakeUps) / 0.025)
        #expect(lane.marks.map(\.label) == ["heartbeat"])
    }

    @Test("the page embeds the lanes, marks and markers as JSON a script cannot be cut short by")
    func pageEmbedsTheRecording() async throws {
        let recorder = try await record()
        let start = try #require(recorder.events.first?.time)
        let html = TimelineHTML.render(
            title: "a <test>", lanes: [(name: "alice's loop", recorder: recorder)], markers: [(at: start + .milliseconds(10), label: "crash")])
        #expect(html.hasPrefix("<!DOCTYPE html>") && html.contains("<title>a &lt;test&gt;</title>"))
        #expect(!html.contains("https://") && !html.contains("src="), "nothing is loaded from outside")
        let open = try #require(html.range(of: #"<script type="application/json" id="timeline-data">"#))
        let close = try #require(html.range(of: "</script>", range: open.upperBound..<html.endIndex))
        let json = String(html[open.upperBound..<close.lowerBound])
        let data = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(data["end"] as? Double == 25_000)
        #expect((data["markers"] as? [[Any]])?.first?.last as? String == "crash")
        let lane = try #require((data["lanes"] as? [[String: Any]])?.first)
        #expect(lane["name"] as? String == "alice's loop")
        let mark = try #require((lane["marks"] as? [[Any]])?.first)
        #expect(mark[0] as? Double == 10_000 && mark[2] as? String == "heartbeat" && mark[3] as? String == "</script> in a detail")
        let summary = try #require(lane["summary"] as? [String: Any])
        #expect(summary["busyPercent"] as? Double == 8 && (summary["longest"] as? [Any])?.first as? String == "timer tick")
        #expect((lane["callouts"] as? [[Any]])?.contains { $0[3] as? String == "timer inner" && $0[4] as? Int == 1 } == true)
    }

    @Test("a page of nothing recorded says so")
    func emptyPage() {
        let html = TimelineHTML.render(title: "empty", lanes: [(name: "idle", recorder: ActivityRecorder())])
        #expect(html.contains("Nothing was recorded."))
    }
}
