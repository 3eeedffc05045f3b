import RunLoopKit
import RunLoopTesting
import Testing

@Suite struct CalloutObserverTests {
    /// Issue 22: the stall detector needs only finished callouts; the report of each callout's start
    /// was half of what watching cost an idle node's passes.
    @Test func anObserverWithoutBeginningsHearsOfEachCalloutOnceWhenItReturns() async throws {
        let (both, endsOnly) = try await onManualClockLoop { loop, clock in
            var both: [RunLoop.Callout] = []
            var endsOnly: [RunLoop.Callout] = []
            let all = RunLoopCalloutObserver(label: "all") { both.append($0) }
            let ends = RunLoopCalloutObserver(label: "ends", reportsBeginnings: false) { endsOnly.append($0) }
            loop.add(all)
            loop.add(ends)
            loop.add(RunLoopTimer(after: .milliseconds(1), label: "work") { _ in clock.advance(by: .milliseconds(3)) }, forMode: "M")
            try loop.run("M", timeout: .milliseconds(10))
            all.invalidate()
            ends.invalidate()
            return (both, endsOnly)
        }
        #expect(both.filter { $0.label == "work" }.map { $0.end == nil } == [true, false])
        let work = endsOnly.filter { $0.label == "work" }
        #expect(work.count == 1)
        #expect(work.first?.duration == .milliseconds(3))
        #expect(endsOnly.allSatisfy { $0.end != nil })
    }
}
