import Logging
import MetricsTestKit
import RunLoopKit
import RunLoopTesting
import Testing

@Suite struct StallDetectorTests {
    @Test func aSlowIterationIsReportedWithItsModeAndLabels() async throws {
        let stalls = try await onManualClockLoop { loop, clock in
            var stalls: [RunLoopStallDetector.Stall] = []
            let detector = RunLoopStallDetector(threshold: .milliseconds(100), logger: nil, metricsFactory: TestMetrics()) {
                stalls.append($0)
            }
            detector.attach(to: loop, modes: ["M"])
            loop.add(RunLoopTimer(after: .milliseconds(10), label: "slow") { _ in clock.advance(by: .milliseconds(300)) }, forMode: "M")
            loop.add(RunLoopTimer(after: .milliseconds(10), label: "quick") { _ in clock.advance(by: .milliseconds(1)) }, forMode: "M")
            try loop.run("M", timeout: .seconds(1))
            detector.detach()
            return stalls
        }
        #expect(stalls.count == 1)
        let stall = try #require(stalls.first)
        #expect(stall.mode == "M")
        #expect(stall.busy == .milliseconds(301))
        #expect(stall.labels == ["slow", "quick"])
        #expect(stall.depth == 1)
    }

    @Test func anIdleLoopIsNeverReportedAndItsIterationsAreCounted() async throws {
        let (stalls, metrics) = try await onManualClockLoop { loop, _ in
            let metrics = TestMetrics()
            var stalls = 0
            let detector = RunLoopStallDetector(threshold: .milliseconds(1), logger: nil, metricsFactory: metrics) { _ in stalls += 1 }
            detector.attach(to: loop, modes: ["M"])
            // Ten virtual seconds of a 10 ms heartbeat that does nothing: almost all of it asleep.
            loop.add(RunLoopTimer(after: .milliseconds(10), repeating: .milliseconds(10), label: "beat") { _ in }, forMode: "M")
            try loop.run("M", timeout: .seconds(10))
            detector.detach()
            return (stalls, metrics)
        }
        #expect(stalls == 0)
        #expect(metrics.counterTotal(label: "runloop.iterations") >= 1000)
        #expect(metrics.counterTotal(label: "runloop.stalls") == 0)
        let asleep = try metrics.expectTimer("runloop.asleep", [("mode", "M")])
        #expect(asleep.values.reduce(0, +) == 10_000_000_000)
        let callouts = try metrics.expectTimer("runloop.callout", [("mode", "M"), ("kind", "timer")])
        #expect(callouts.values.count == 1000)
    }

    /// Issue 22: recording into the backend on every pass was 9 % of an idle chat node's CPU.
    @Test func valuesReachTheMetricsOnceASecondAndAllOfThemAtExit() async throws {
        let (seen, metrics) = try await onManualClockLoop { loop, _ in
            let metrics = TestMetrics()
            let detector = RunLoopStallDetector(threshold: .seconds(1), logger: nil, metricsFactory: metrics)
            detector.attach(to: loop, modes: ["M"])
            // What the metrics say at each of 1,000 passes, 10 ms apart.
            var seen: [Int64] = []
            loop.add(
                RunLoopTimer(after: .milliseconds(10), repeating: .milliseconds(10), label: "look") { _ in
                    seen.append(metrics.counterTotal(label: "runloop.iterations"))
                }, forMode: "M")
            try loop.run("M", timeout: .seconds(10))
            detector.detach()
            return (seen, metrics)
        }
        // Published in ten batches (the first at the first pass), not once a pass, nor only at exit.
        #expect((9...11).contains(Set(seen).count))
        #expect(seen.count >= 1000)
        #expect(metrics.counterTotal(label: "runloop.iterations") >= 1000)
        #expect(metrics.counterTotal(label: "runloop.iterations") > seen.last ?? 0)
        let busy = try metrics.expectTimer("runloop.busy", [("mode", "M")])
        #expect(busy.values.count == metrics.counterTotal(label: "runloop.iterations"))
    }

    @Test func aNestedRunsSleepIsNotItsCallersWorkButASlowNestedCalloutIs() async throws {
        let stalls = try await onManualClockLoop { loop, clock in
            var stalls: [RunLoopStallDetector.Stall] = []
            let detector = RunLoopStallDetector(threshold: .milliseconds(100), logger: nil, metricsFactory: TestMetrics()) {
                stalls.append($0)
            }
            detector.attach(to: loop, modes: ["Outer", "Modal"])
            loop.add(
                RunLoopTimer(after: .milliseconds(10), label: "modal runner") { _ in
                    // A modal run that sleeps a second, then a slow callout inside it.
                    loop.add(RunLoopTimer(after: .seconds(1), label: "slow inside") { _ in clock.advance(by: .milliseconds(200)) }, forMode: "Modal")
                    _ = try? loop.run("Modal", timeout: .seconds(2))
                }, forMode: "Outer")
            try loop.run("Outer", timeout: .seconds(5))
            detector.detach()
            return stalls
        }
        // The nested iteration stalled (200 ms in "slow inside"). The outer iteration lasted 1.2 s, of
        // which 1 s was the nested run's sleep: its 200 ms of work are reported too, as the modal runner's.
        #expect(stalls.map(\.depth) == [2, 1])
        #expect(stalls.map(\.busy) == [.milliseconds(200), .milliseconds(200)])
        #expect(stalls.first?.labels == ["slow inside"])
        #expect(stalls.first?.mode == "Modal")
        #expect(stalls.last?.labels == ["modal runner"])
    }

    @Test func stallsAreLoggedAsWarnings() async throws {
        let logged = try await onManualClockLoop { loop, clock in
            let handler = CapturingLogHandler()
            let logger = Logger(label: "test.stalls") { _ in handler }
            let detector = RunLoopStallDetector(threshold: .milliseconds(50), logger: logger, metricsFactory: TestMetrics())
            detector.attach(to: loop, modes: ["M"])
            loop.add(RunLoopTimer(after: .milliseconds(1), label: "hog") { _ in clock.advance(by: .milliseconds(80)) }, forMode: "M")
            try loop.run("M", timeout: .seconds(1))
            detector.detach()
            return handler.records.get()
        }
        #expect(logged.count == 1)
        #expect(logged.first?.level == .warning)
        #expect(logged.first?.metadata["callouts"] == "hog")
        #expect(logged.first?.metadata["mode"] == "M")
    }

    /// A mass disconnect runs one read callout per closed connection in one pass; at 16,700 the
    /// stall line listed every one of them.
    @Test func aWidePassIsLoggedAsItsSlowestCalloutsAndACount() async throws {
        let logged = try await onManualClockLoop { loop, clock in
            let handler = CapturingLogHandler()
            let logger = Logger(label: "test.stalls") { _ in handler }
            let detector = RunLoopStallDetector(threshold: .milliseconds(50), logger: logger, metricsFactory: TestMetrics())
            detector.attach(to: loop, modes: ["M"])
            // Read i takes i ms of the pass, so the slowest are the last ones added.
            for index in 1...40 {
                loop.add(
                    RunLoopTimer(after: .milliseconds(1), label: "tcp read \(index)") { _ in
                        clock.advance(by: .milliseconds(Int64(index)))
                    }, forMode: "M")
            }
            try loop.run("M", timeout: .seconds(5))
            detector.detach()
            return handler.records.get()
        }
        let record = try #require(logged.first)
        let slowest = (31...40).reversed().map { "tcp read \($0)" }
        #expect(record.metadata["callouts"] == slowest.joined(separator: ", ") + " and 30 more")
        #expect(record.metadata["calloutCount"] == "40")
    }

    /// Issue 22: a pass of thousands of callouts (a crowd's connections closing together) must not
    /// leave its list's room behind for as long as the loop runs.
    @Test func aWidePassLeavesNoRoomForItsCalloutsBehind() async throws {
        let rooms = try await onManualClockLoop { loop, _ in
            let detector = RunLoopStallDetector(threshold: .seconds(1), logger: nil, metricsFactory: TestMetrics())
            detector.attach(to: loop, modes: ["M"])
            for _ in 0..<5_000 { loop.add(RunLoopTimer(after: .milliseconds(1)) { _ in }, forMode: "M") }
            var rooms: [Int] = []
            // The passes after the wide one, in the same activation.
            for delay in [2, 3] {
                loop.add(RunLoopTimer(after: .milliseconds(Int64(delay))) { _ in rooms.append(detector.calloutRoom) }, forMode: "M")
            }
            try loop.run("M", timeout: .seconds(1))
            detector.detach()
            return rooms
        }
        #expect(rooms.count == 2)
        #expect(rooms.allSatisfy { $0 <= RunLoopStallDetector.keptRoom }, "room kept: \(rooms)")
    }

    @Test func aSummaryNamesEveryLabelWhenFewRan() async throws {
        let stalls = try await onManualClockLoop { loop, clock in
            var stalls: [RunLoopStallDetector.Stall] = []
            let detector = RunLoopStallDetector(threshold: .milliseconds(10), logger: nil, metricsFactory: TestMetrics()) {
                stalls.append($0)
            }
            detector.attach(to: loop, modes: ["M"])
            for label in ["a", "b", "c"] {
                loop.add(RunLoopTimer(after: .milliseconds(1), label: label) { _ in clock.advance(by: .milliseconds(5)) }, forMode: "M")
            }
            try loop.run("M", timeout: .seconds(1))
            detector.detach()
            return stalls
        }
        let stall = try #require(stalls.first)
        #expect(stall.summary(limit: 3) == stall.labels.joined(separator: ", "))
        #expect(stall.summary(limit: 2) == stall.labels.prefix(2).joined(separator: ", ") + " and 1 more")
    }
}
