import MetricsTestKit
import RunLoopKit
import RunLoopTesting
import Testing

/// Issue 22: the detector's values wait in one list per mode and reach their timers in batches. These
/// pin each figure to its exact value, so a cut in that bookkeeping cannot mix timers up, drop a value
/// or lose a callout from a stall's report.
@Suite struct StallDetectorFigureTests {
    /// One pass, on a manual clock: a 10 ms sleep, then timers of 1, 2 and 3 ms, the last queueing a
    /// block of 4 ms that the same pass runs.
    private static func onePass(threshold: Duration) async throws -> (TestMetrics, [RunLoopStallDetector.Stall]) {
        try await onManualClockLoop { loop, clock in
            let metrics = TestMetrics()
            var stalls: [RunLoopStallDetector.Stall] = []
            let detector = RunLoopStallDetector(threshold: threshold, logger: nil, metricsFactory: metrics) { stalls.append($0) }
            detector.attach(to: loop, modes: ["M"])
            for (label, milliseconds) in [("a", 1), ("b", 2), ("c", 3)] {
                loop.add(
                    RunLoopTimer(after: .milliseconds(10), label: label) { _ in
                        clock.advance(by: .milliseconds(Int64(milliseconds)))
                        guard label == "c" else { return }
                        try? loop.performFromLoopThread(inModes: ["M"], label: "d") { clock.advance(by: .milliseconds(4)) }
                    }, forMode: "M")
            }
            try loop.run("M", timeout: .seconds(1))
            detector.detach()
            return (metrics, stalls)
        }
    }

    @Test func everyValueOfAPassReachesItsOwnTimerAtExit() async throws {
        let (metrics, stalls) = try await Self.onePass(threshold: .seconds(1))
        #expect(stalls.isEmpty)
        #expect(metrics.counterTotal(label: "runloop.iterations") == 1)
        #expect(metrics.counterTotal(label: "runloop.stalls") == 0)
        #expect(try metrics.expectTimer("runloop.busy", [("mode", "M")]).values == [10_000_000])
        #expect(try metrics.expectTimer("runloop.asleep", [("mode", "M")]).values == [10_000_000])
        let timers = try metrics.expectTimer("runloop.callout", [("mode", "M"), ("kind", "timer")])
        #expect(timers.values == [1_000_000, 2_000_000, 3_000_000])
        let blocks = try metrics.expectTimer("runloop.callout", [("mode", "M"), ("kind", "block")])
        #expect(blocks.values == [4_000_000])
        // The detector's own observers ran three times, and are no callout of the loop's work.
        #expect(throws: (any Error).self) { try metrics.expectTimer("runloop.callout", [("mode", "M"), ("kind", "observer")]) }
    }

    @Test func aStallListsEveryCalloutOfItsPassSlowestFirst() async throws {
        let (metrics, stalls) = try await Self.onePass(threshold: .milliseconds(5))
        #expect(stalls.count == 1)
        let stall = try #require(stalls.first)
        #expect(stall.busy == .milliseconds(10))
        #expect(stall.callouts.map(\.label) == ["d", "c", "b", "a"])
        #expect(stall.callouts.map(\.duration) == [4, 3, 2, 1].map { .milliseconds($0) })
        #expect(stall.callouts.map(\.kind) == [.block, .timer, .timer, .timer])
        #expect(stall.callouts.allSatisfy { $0.mode == "M" && $0.depth == 1 })
        #expect(metrics.counterTotal(label: "runloop.stalls") == 1)
    }

    /// A callout of a nested run in a mode the detector does not watch counts under that mode, and is
    /// not one of the watched iteration's callouts (it ran at another depth): the report names what the
    /// watched activation called.
    @Test func aNestedUnwatchedModesCalloutCountsUnderItsOwnMode() async throws {
        let (metrics, stalls) = try await onManualClockLoop { loop, clock in
            let metrics = TestMetrics()
            var stalls: [RunLoopStallDetector.Stall] = []
            let detector = RunLoopStallDetector(threshold: .milliseconds(1), logger: nil, metricsFactory: metrics) { stalls.append($0) }
            detector.attach(to: loop, modes: ["Outer"])
            loop.add(
                RunLoopTimer(after: .milliseconds(10), label: "runner") { _ in
                    loop.add(RunLoopTimer(after: .milliseconds(5), label: "inner") { _ in clock.advance(by: .milliseconds(2)) }, forMode: "Inner")
                    _ = try? loop.run("Inner", timeout: .seconds(1))
                }, forMode: "Outer")
            try loop.run("Outer", timeout: .seconds(1))
            detector.detach()
            return (metrics, stalls)
        }
        #expect(try metrics.expectTimer("runloop.callout", [("mode", "Inner"), ("kind", "timer")]).values == [2_000_000])
        #expect(try metrics.expectTimer("runloop.callout", [("mode", "Outer"), ("kind", "timer")]).values == [7_000_000])
        #expect(stalls.map(\.labels) == [["runner"]])
    }

    /// The detector's observers are hidden from its own callout observer only: an activity recorder on
    /// the same loop still sees them, and the detector still counts the recorder's observer's work.
    @Test func anotherCalloutObserverStillHearsOfTheDetectorsObservers() async throws {
        let (tokens, metrics) = try await onManualClockLoop { loop, _ in
            let metrics = TestMetrics()
            let detector = RunLoopStallDetector(threshold: .seconds(1), logger: nil, metricsFactory: metrics)
            let recorder = ActivityRecorder()
            detector.attach(to: loop, modes: ["M"])
            recorder.attach(to: loop, modes: ["M"])
            loop.add(RunLoopTimer(after: .milliseconds(5), label: "tick") { _ in }, forMode: "M")
            try loop.run("M", timeout: .seconds(1))
            detector.detach()
            recorder.detach()
            return (recorder.tokens, metrics)
        }
        #expect(tokens.contains("O:stall detector"))
        #expect(!tokens.contains("O:ActivityRecorder"))
        #expect(tokens.contains("T:tick"))
        let observers = try metrics.expectTimer("runloop.callout", [("mode", "M"), ("kind", "observer")])
        #expect(!observers.values.isEmpty)
    }
}
