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

    /// Issue 22: a tool's callout observer is not told of its own observers' callouts (three a pass
    /// for the stall detector); another callout observer still is, beginnings and ends.
    @Test func anIgnoredItemsCalloutsReachOnlyTheObserversThatDoNotIgnoreIt() async throws {
        let (alone, ignoring, all) = try await onManualClockLoop { loop, _ in
            let watched = RunLoopObserver(activities: [.beforeTimers], label: "watched") { _, _ in }
            loop.add(watched, forMode: "M")
            var alone: [RunLoop.Callout] = []
            let only = RunLoopCalloutObserver(label: "only", reportsBeginnings: true, ignoring: [ObjectIdentifier(watched)]) {
                alone.append($0)
            }
            loop.add(only)
            loop.add(RunLoopTimer(after: .milliseconds(1), label: "first") { _ in }, forMode: "M")
            try loop.run("M", timeout: .milliseconds(5))
            only.invalidate()

            var ignoring: [RunLoop.Callout] = []
            var all: [RunLoop.Callout] = []
            let ignorer = RunLoopCalloutObserver(label: "ignorer", reportsBeginnings: true, ignoring: [ObjectIdentifier(watched)]) {
                ignoring.append($0)
            }
            let plain = RunLoopCalloutObserver(label: "plain") { all.append($0) }
            loop.add(ignorer)
            loop.add(plain)
            loop.add(RunLoopTimer(after: .milliseconds(1), label: "second") { _ in }, forMode: "M")
            try loop.run("M", timeout: .milliseconds(5))
            ignorer.invalidate()
            plain.invalidate()
            watched.invalidate()
            return (alone, ignoring, all)
        }
        #expect(alone.map(\.label) == ["first", "first"])
        #expect(ignoring.map(\.label) == ["second", "second"])
        #expect(all.contains { $0.label == "watched" && $0.end == nil })
        #expect(all.contains { $0.label == "watched" && $0.end != nil })
        #expect(all.filter { $0.label == "second" }.count == 2)
    }
}
