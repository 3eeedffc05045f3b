import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// What a timer batch and a blocks pass decide when they start, and what the callouts inside them can
/// still change: the two places where a callout's changes meet work already picked for the pass.
/// See docs/BEHAVIOUR.md §3.4 and §7, and the Deviations article.
@Suite struct BatchSnapshotTests {
    /// Two timers of mode M, both due when a poll of M starts: `a` (10 ms), then `b` (20 ms, also in
    /// mode N). `a`'s callback takes `b` out of `modes`. Returns the callouts and whether `b` is still
    /// in N afterwards.
    private func pollBatch(whereTheFirstTimerRemovesTheSecondFrom modes: [String]) async throws -> ([String], Bool) {
        try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let running = RunLoop.Mode("M")
            let other = RunLoop.Mode("N")
            let late = RunLoopTimer(after: .milliseconds(20), label: "b") { _ in trace.append("T:b") }
            let early = RunLoopTimer(after: .milliseconds(10), label: "a") { _ in
                trace.append("T:a")
                for mode in modes { loop.remove(late, forMode: RunLoop.Mode(mode)) }
            }
            loop.add(early, forMode: running)
            loop.add(late, forMode: running)
            loop.add(late, forMode: other)
            clock.advance(by: .milliseconds(30))
            try loop.run(running, timeout: .zero)
            return (trace.events, loop.contains(late, forMode: other))
        }
    }

    /// CFRunLoop's re-check before each timer of a batch is "valid, due, not in its callout, still on
    /// this loop" — not "still in the running mode". RunLoopKit matches it.
    @Test func aTimerMovedOutOfTheRunningModeButStillInAnotherFiresInTheSameBatch() async throws {
        let (events, stillInOther) = try await pollBatch(whereTheFirstTimerRemovesTheSecondFrom: ["M"])
        #expect(events == tokens("T:a T:b"))
        // A one-shot that fired is gone from every mode, as after any fire.
        #expect(!stillInOther)
    }

    /// The other half of the same re-check: a timer an earlier one took out of every mode has left the
    /// loop and does not fire.
    @Test func aTimerTakenOutOfEveryModeByAnEarlierTimerDoesNotFire() async throws {
        let (events, _) = try await pollBatch(whereTheFirstTimerRemovesTheSecondFrom: ["M", "N"])
        #expect(events == tokens("T:a"))
    }

    /// Kept deliberately different from CFRunLoop (see the Deviations article): CF detaches the whole
    /// block queue while a blocks pass runs, so a run nested inside a block sees none of the blocks
    /// queued before the pass — a mode holding only such a block is empty there (finished at once).
    /// RunLoopKit takes only the blocks it is about to run; a nested run performs the blocks queued for
    /// its own mode, exactly as it would when nested inside a timer or a source.
    @Test func aRunNestedInABlockPerformsTheBlocksQueuedForItsMode() async throws {
        let (events, nested) = try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let outer = RunLoop.Mode("Outer")
            let inner = RunLoop.Mode("Inner")
            loop.add(trace.observer(prefix: "in:"), forMode: inner)
            var nested: RunLoop.RunResult?
            try loop.performFromLoopThread(inModes: [outer]) {
                trace.append("B:outer")
                nested = try? loop.run(inner, timeout: .milliseconds(50))
                trace.append("nested=\(nested.map { "\($0)" } ?? "error")")
            }
            loop.perform(inModes: [inner]) { trace.append("B:inner") }
            try loop.run(outer, timeout: .zero)
            return (trace.events, nested)
        }
        // CFRunLoop: `B:outer nested=finished`. Here the inner block runs in the nested run, which then
        // sleeps to its timeout like any block-only mode (§9.12).
        #expect(events == tokens("B:outer in:E in:BT in:BS B:inner in:BW in:AW in:X nested=timedOut"))
        #expect(nested == .timedOut)
    }

    /// The same nested run started from a timer callout: identical, which is the reason for the choice.
    @Test func aRunNestedInATimerPerformsTheBlocksQueuedForItsMode() async throws {
        let events = try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let outer = RunLoop.Mode("Outer")
            let inner = RunLoop.Mode("Inner")
            loop.add(trace.observer(prefix: "in:"), forMode: inner)
            loop.add(
                RunLoopTimer(after: .zero) { _ in
                    trace.append("T:outer")
                    let nested = try? loop.run(inner, timeout: .milliseconds(50))
                    trace.append("nested=\(nested.map { "\($0)" } ?? "error")")
                }, forMode: outer)
            loop.perform(inModes: [inner]) { trace.append("B:inner") }
            try loop.run(outer, timeout: .zero)
            return trace.events
        }
        #expect(events == tokens("T:outer in:E in:BT in:BS B:inner in:BW in:AW in:X nested=timedOut"))
    }
    /// As CFRunLoop, which re-reads the clock before each timer of a batch: a timer of the batch that an
    /// earlier one re-dated to "now", after time went on, is still due and fires in the same batch.
    @Test func aTimerOfTheBatchRedatedToNowByAnEarlierOneFiresInTheSameBatch() async throws {
        let (events, fired) = try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            var fired: Duration?
            let start = clock.now
            let late = RunLoopTimer(after: .milliseconds(20), label: "b") { _ in
                fired = clock.now - start
                trace.append("T:b")
            }
            let early = RunLoopTimer(after: .milliseconds(10), label: "a") { _ in
                trace.append("T:a")
                clock.advance(by: .milliseconds(10))  // a slow callout
                late.nextFireDate = clock.now
            }
            loop.add(early, forMode: mode)
            loop.add(late, forMode: mode)
            clock.advance(by: .milliseconds(30))
            try loop.run(mode, timeout: .zero)
            return (trace.events, fired)
        }
        #expect(events == tokens("T:a T:b"), "a poll has one batch: b fires in it or not at all")
        #expect(fired == .milliseconds(40))
    }
}
