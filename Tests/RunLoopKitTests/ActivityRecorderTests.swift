import RunLoopKit
import RunLoopTesting
import Testing

@Suite struct ActivityRecorderTests {
    @Test func recordsActivitiesAndLabelledCalloutsInOrder() async throws {
        let tokens = try await onManualClockLoop { loop, _ in
            let recorder = ActivityRecorder()
            let pair = SocketPair()
            recorder.attach(to: loop, modes: ["M"])
            let source = RunLoopSource(label: "s") { _ in }
            let port = try RunLoopPortSource(fileDescriptor: pair.right, label: "p") { port, _ in _ = readAvailable(port.fileDescriptor) }
            loop.add(source, forMode: "M")
            try loop.add(port, forMode: "M")
            loop.add(RunLoopTimer(after: .milliseconds(5), label: "tick") { _ in }, forMode: "M")
            loop.perform(inModes: ["M"], label: "b") {}
            source.signal()
            pair.send("x")
            try loop.run("M", timeout: .milliseconds(10), returnAfterSourceHandled: false)
            source.invalidate()
            port.invalidate()
            return recorder.tokens
        }
        // The performed source makes the first iteration poll instead of sleep, and that poll finds the
        // port already readable; the timer comes after a real wait, and the run ends at its timeout.
        #expect(
            tokens == [
                "E", "BT", "BS", "B:b", "S:s", "P:p", "BT", "BS", "BW", "AW", "T:tick",
                "BT", "BS", "BW", "AW", "X"
            ])
    }

    @Test func eventsCarryModeTimeIterationAndDepth() async throws {
        let (events, iterations, start) = try await onManualClockLoop { loop, clock in
            let recorder = ActivityRecorder()
            recorder.attach(to: loop, modes: ["Outer", "Inner"])
            let start = clock.now
            loop.add(
                RunLoopTimer(after: .milliseconds(10), label: "outer") { _ in
                    loop.add(RunLoopTimer(after: .milliseconds(5), label: "inner") { _ in }, forMode: "Inner")
                    _ = try? loop.run("Inner", timeout: .seconds(1))
                }, forMode: "Outer")
            try loop.run("Outer", timeout: .seconds(1))
            return (recorder.events, recorder.iterations, start)
        }
        let inner = try #require(events.first { $0.token == "T:inner" })
        #expect(inner.mode == "Inner")
        #expect(inner.depth == 2)
        #expect(inner.iteration == 1)
        #expect(inner.time - start == .milliseconds(15))
        let outer = try #require(events.first { $0.token == "T:outer" })
        #expect(outer.depth == 1)
        #expect(outer.end.map { $0 - outer.time } == .milliseconds(5), "the outer callout lasted the nested run")
        let handled = iterations.map { ($0.mode.rawValue, $0.depth, $0.handled.map(\.token)) }.filter { !$0.2.isEmpty }
        #expect(handled.map(\.0) == ["Outer", "Inner"])
        #expect(handled.map(\.2) == [["T:outer"], ["T:inner"]])
    }

    @Test func recordsOnlyTheChosenModesAndStopsWhenDetached() async throws {
        let (tokens, afterDetach) = try await onManualClockLoop { loop, _ in
            let recorder = ActivityRecorder()
            recorder.attach(to: loop, modes: ["A"])
            loop.add(RunLoopTimer(after: .milliseconds(1), label: "a") { _ in }, forMode: "A")
            loop.add(RunLoopTimer(after: .milliseconds(1), label: "b") { _ in }, forMode: "B")
            try loop.run("B", timeout: .seconds(1))
            try loop.run("A", timeout: .seconds(1))
            recorder.detach()
            loop.add(RunLoopTimer(after: .milliseconds(1), label: "later") { _ in }, forMode: "A")
            try loop.run("A", timeout: .seconds(1))
            return (recorder.tokens, recorder.count(of: "T:later"))
        }
        #expect(tokens == ["E", "BT", "BS", "BW", "AW", "T:a", "X"])
        #expect(afterDetach == 0)
    }

    @Test func checksExplainWhatDiffers() async throws {
        let (exact, spurious, wrong, subsequence, missing, count, order, reversed) = try await onManualClockLoop { loop, _ in
            let recorder = ActivityRecorder()
            recorder.attach(to: loop, modes: ["M"])
            loop.add(RunLoopTimer(after: .milliseconds(1), label: "first") { _ in }, forMode: "M")
            loop.add(RunLoopTimer(after: .milliseconds(2), label: "second") { _ in }, forMode: "M")
            try loop.run("M", timeout: .seconds(1))
            return (
                recorder.check(sequence: "E BT BS BW AW T:first BT BS BW AW T:second X"),
                recorder.check(sequence: "E BT BS BW AW T:first T:second X", allowingSpuriousWakes: true),
                recorder.check(sequence: "E BT BS X"),
                recorder.check(subsequence: "E T:first T:second X"),
                recorder.check(subsequence: "T:second T:first"),
                recorder.check(count: 2, of: "BW"),
                recorder.check(handled: "T:first", before: "T:second"),
                recorder.check(handled: "T:second", before: "T:first")
            )
        }
        #expect(exact.passed)
        #expect(!spurious.passed, "T:first and T:second came in separate iterations")
        #expect(!wrong.passed)
        #expect(wrong.description.contains("expected E BT BS X"))
        #expect(subsequence.passed)
        #expect(!missing.passed)
        #expect(count.passed)
        #expect(order.passed)
        #expect(!reversed.passed)
        #expect(reversed.description.contains("came before"))
    }

    @Test func expectTraceRecordsAnIssueOnlyWhenTheCheckFails() {
        #expect(expectTrace(TraceCheck(passed: true, description: "fine")))
        withKnownIssue {
            expectTrace(TraceCheck(passed: false, description: "expected E X got E BT BS X"))
        }
    }

    @Test func runUntilStopsWhenTheConditionHoldsWithoutSleeping() async throws {
        let (held, elapsed, timedOut, timeoutElapsed) = try await onManualClockLoop { loop, clock in
            var ticks = 0
            loop.add(RunLoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { _ in ticks += 1 }, forMode: "M")
            let start = clock.now
            let held = try loop.runUntil(in: "M", timeout: .seconds(5)) { ticks == 3 }
            let elapsed = clock.now - start
            let again = clock.now
            let timedOut = try loop.runUntil(in: "M", timeout: .seconds(1)) { ticks < 0 }
            return (held, elapsed, timedOut, clock.now - again)
        }
        #expect(held)
        #expect(elapsed == .milliseconds(30))
        #expect(!timedOut)
        #expect(timeoutElapsed == .seconds(1))
    }
}

/// The README's example, verbatim, so the documentation cannot rot.
@Suite struct ReadmeExampleTests {
    @Test func observingALoopInATest() async throws {
        let trace = try await onManualClockLoop { loop, clock in  // own thread, own loop, virtual time
            let recorder = ActivityRecorder()
            recorder.attach(to: loop, modes: ["M"])
            loop.add(RunLoopTimer(after: .seconds(30), label: "tick") { _ in }, forMode: "M")
            try loop.run("M", timeout: .seconds(60))  // returns at once: the clock jumps
            return recorder
        }
        expectTrace(trace.check(sequence: "E BT BS BW AW T:tick X"))  // XCTest: XCTAssertTrace(...)
    }
}
