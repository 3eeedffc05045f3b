import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// docs/BEHAVIOUR.md §9 on RunLoopKit, perform blocks: block-only modes, blocks enqueued by blocks, the block points, mode filtering (scenarios 12–15).
///
/// How these tests run (a manual clock, a thread per loop, trace tokens): see Support/Conformance.swift.
@Suite("§9 blocks (scenarios 12–15)") struct ConformanceBlocksTests {
    @Test("§9.12 block-only mode") func blockOnlyMode() async throws {
        let (events, result, elapsed, secondEvents, secondResult) = try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            loop.add(trace.observer(), forMode: mode)
            // Queued from the loop's own thread: no wake-up (deviation (a) applies to other threads only).
            loop.perform(inModes: [mode]) { trace.append("B") }
            let start = clock.now
            let result = try loop.run(mode, timeout: .milliseconds(200))
            let elapsed = clock.now - start
            let events = trace.events
            trace.reset()
            let secondResult = try loop.run(mode, timeout: .milliseconds(200))
            return (events, result, elapsed, trace.events, secondResult)
        }
        // The mode empties during the iteration, which is noticed only after the wait (§2.3).
        #expect(events == tokens("E BT BS B BW AW X"))
        #expect(result == .timedOut)
        #expect(elapsed == .milliseconds(200))
        #expect(secondResult == .finished)
        #expect(secondEvents.isEmpty)
    }

    /// Queues block A for mode M, whose body appends "B:A" and then calls `inA`; calls `afterA`; runs M
    /// (traced) for `timeout`. Returns the trace, the result and the virtual time the run took.
    private func runBlockA(
        timeout: Duration,
        _ inA: @escaping @Sendable (RunLoop, RunLoop.Mode, Trace) -> Void,
        afterA: @escaping @Sendable (RunLoop, Trace) -> Void = { _, _ in }
    ) async throws -> (events: [String], result: RunLoop.RunResult, elapsed: Duration) {
        try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            loop.add(trace.observer(), forMode: mode)
            loop.perform(inModes: [mode]) {
                trace.append("B:A")
                inA(loop, mode, trace)
            }
            afterA(loop, trace)
            let (result, elapsed) = try timedRun(loop, mode, timeout: timeout, on: clock)
            return (trace.events, result, elapsed)
        }
    }

    @Test("§9.13 block enqueued by a block") func blockEnqueuedByBlock() async throws {
        let (events, result, elapsed) = try await runBlockA(timeout: .milliseconds(200)) { loop, mode, trace in
            loop.perform(inModes: [mode]) { trace.append("B:B") }
        }
        // B is not run by the pass that queued it; the loop sleeps first, B runs in pass #3.
        #expect(events == tokens("E BT BS B:A BW AW B:B X"))
        #expect(result == .timedOut)
        #expect(elapsed == .milliseconds(200))
    }

    /// Kept different from CFRunLoop (see the Deviations article): a blocks pass picks the blocks it runs
    /// when it starts. A `.common` block queued behind a block that makes the running mode common waits
    /// for the next pass — here after the wait, as a block queued by a block (§9.13). CF checks the
    /// common set before each block and runs it in the same pass (`B:A B:common BW AW`).
    @Test("a .common block behind the block that made the mode common waits for the next pass")
    func commonBlockBehindTheBlockThatMadeTheModeCommon() async throws {
        let (events, result, elapsed) = try await runBlockA(
            timeout: .seconds(1), { loop, mode, _ in loop.addCommonMode(mode) },
            afterA: { loop, trace in loop.perform(inModes: [.common]) { trace.append("B:common") } })
        #expect(events == tokens("E BT BS B:A BW AW B:common X"))
        #expect(result == .timedOut)
        #expect(elapsed == .seconds(1))
    }

    @Test("§9.14 block points around sources0") func blockPointsAroundSources0() async throws {
        let (events, result) = try await onManualClockLoop { loop, _ in
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            loop.add(trace.observer(), forMode: mode)
            let source = RunLoopSource { _ in
                trace.append("S")
                loop.perform(inModes: [mode]) { trace.append("B:C") }
            }
            loop.add(source, forMode: mode)
            loop.perform(inModes: [mode]) { trace.append("B:B1") }
            source.signal()
            let result = try loop.run(mode, timeout: .zero)
            source.invalidate()
            return (trace.events, result)
        }
        // B1 in pass #1, then the source, then C in pass #2 of the same iteration.
        #expect(events == tokens("E BT BS B:B1 S B:C X"))
        #expect(result == .timedOut)
    }

    @Test("§9.15 block mode filtering") func blockModeFiltering() async throws {
        let (pollA, resultA, pollB, resultB, laterA, laterB) = try await onManualClockLoop { loop, _ in
            let trace = Trace()
            let modeA = RunLoop.Mode("A")
            let modeB = RunLoop.Mode("B")
            loop.addCommonMode(modeA)
            let observer = trace.observer()
            loop.add(observer, forMode: modeA)
            loop.add(observer, forMode: modeB)

            loop.perform(inModes: [modeB]) { trace.append("B:forB") }
            loop.perform(inModes: [.common]) { trace.append("B:common") }
            loop.perform(inModes: [modeA]) { trace.append("B:A") }

            let resultA = try loop.run(modeA, timeout: .zero)
            let pollA = trace.events
            trace.reset()
            let resultB = try loop.run(modeB, timeout: .zero)
            let pollB = trace.events
            // Every block ran once: both modes are empty now.
            let laterA = try loop.run(modeA, timeout: .zero)
            let laterB = try loop.run(modeB, timeout: .zero)
            return (pollA, resultA, pollB, resultB, laterA, laterB)
        }
        #expect(pollA == tokens("E BT BS B:common B:A X"))
        #expect(resultA == .timedOut)
        #expect(pollB == tokens("E BT BS B:forB X"))
        #expect(resultB == .timedOut)
        #expect(laterA == .finished)
        #expect(laterB == .finished)
    }
    @Test("blocks a pass leaves for other modes keep their FIFO order, and so do the ones it runs")
    func blocksLeftForOtherModesKeepTheirOrder() async throws {
        let (inA, inB) = try await onManualClockLoop { loop, _ in
            let trace = Trace()
            let modeA = RunLoop.Mode("A")
            let modeB = RunLoop.Mode("B")
            // Interleaved, so the pass for A takes blocks out of the middle of the queue.
            for index in 1...3 {
                loop.perform(inModes: [modeB]) { trace.append("B\(index)") }
                loop.perform(inModes: [modeA]) { trace.append("A\(index)") }
            }
            loop.perform(inModes: [modeB]) { trace.append("B4") }
            try loop.run(modeA, timeout: .zero)
            let inA = trace.events
            trace.reset()
            try loop.run(modeB, timeout: .zero)
            return (inA, trace.events)
        }
        #expect(inA == ["A1", "A2", "A3"])
        #expect(inB == ["B1", "B2", "B3", "B4"])
    }

    @Test("default-mode blocks wait in other modes, common ones included, before and after other-mode blocks")
    func defaultModeBlocksBesideOtherModeBlocks() async throws {
        // A default-only queue is taken whole in the default mode and left alone elsewhere without
        // comparing mode names (`otherModeBlockCount` at zero): this pins that shortcut against the
        // general path, across the count going up and back to zero.
        let passes = try await onManualClockLoop { loop, _ in
            let trace = Trace()
            let modeA = RunLoop.Mode("A")
            loop.addCommonMode(modeA)
            var passes: [[String]] = []
            func pass(_ mode: RunLoop.Mode) throws {
                trace.reset()
                try loop.run(mode, timeout: .zero)
                passes.append(trace.events)
            }
            loop.perform { trace.append("D1") }
            try pass(modeA)  // only default-mode blocks wait: none runs in a common mode that is not the default
            loop.perform(inModes: [modeA]) { trace.append("A1") }
            loop.perform { trace.append("D2") }
            try pass(modeA)
            try pass(.default)
            // The other-mode block ran: the shortcut is back, and must still leave A's next block to A.
            loop.perform(inModes: [modeA]) { trace.append("A2") }
            try pass(.default)
            loop.perform(inModes: [.common]) { trace.append("C1") }
            loop.perform(inModes: [RunLoop.Mode("kCFRunLoopDefaultMode")]) { trace.append("D3") }
            try pass(modeA)
            try pass(.default)
            return passes
        }
        #expect(passes == [[], ["A1"], ["D1", "D2"], [], ["A2", "C1"], ["D3"]])
    }
}
