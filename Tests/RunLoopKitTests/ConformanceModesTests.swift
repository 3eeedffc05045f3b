import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// docs/BEHAVIOUR.md §9 on RunLoopKit, modes: empty and unknown modes, the main thread's default mode, a timer in two modes, common modes (scenarios 1–2, 4, 35–37, 41–42).
///
/// How these tests run (a manual clock, a thread per loop, trace tokens): see Support/Conformance.swift.
@Suite("§9 modes (scenarios 1–2, 4, 35–37, 41–42)") struct ConformanceModesTests {
    @Test("§9.1 empty mode") func emptyMode() async throws {
        let (events, result, elapsed, modeExists) = try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            // Observers alone do not keep a mode alive (§2.3).
            loop.add(trace.observer(), forMode: mode)
            let start = clock.now
            let result = try loop.run(mode, timeout: .seconds(1))
            return (trace.events, result, clock.now - start, loop.allModes.contains(mode))
        }
        #expect(modeExists)  // adding the observer created M; it is empty, not missing
        #expect(result == .finished)
        #expect(events.isEmpty, "no callout, not even Entry/Exit: \(events)")
        #expect(elapsed == .zero)
    }

    @Test("§9.2 unknown mode") func unknownMode() async throws {
        let (error, elapsed, modesBefore, modesAfter) = try await onManualClockLoop { loop, clock in
            let mode = RunLoop.Mode("Never-Used")
            let before = loop.allModes
            let start = clock.now
            let error = caught { () throws(RunLoopError) in try loop.run(mode, timeout: .seconds(1)) }
            return (error, clock.now - start, before, loop.allModes)
        }
        // Deviation: CF returns finished at once; RunLoopKit refuses the name (see Deviations.md).
        #expect(error == .unknownMode("Never-Used"))
        #expect(elapsed == .zero)
        // Running a mode never creates it.
        #expect(!modesAfter.contains(RunLoop.Mode("Never-Used")))
        #expect(Set(modesAfter) == Set(modesBefore))
    }

    // §9.4 "Main-thread default mode never finishes" is deliberately not covered:
    // - it needs the main thread's loop running on the main thread, which Swift Testing owns (these
    //   tests must never touch RunLoop.main);
    // - the behaviour comes from CFRunLoop servicing the main dispatch queue as permanent content of
    //   the main loop's common modes (§2.3, §5.2); RunLoopKit does not integrate the main dispatch queue,
    //   so the scenario has no counterpart here. The secondary-thread side of §2.3 (a mode with nothing
    //   left finishes) is covered by §9.1, §9.3, §9.12 and §9.17.

    @Test("§9.35 timer in two modes")
    func timerInTwoModes() async throws {
        let (eventsA, resultA, inA, inB, valid, eventsB, resultB) = try await onManualClockLoop { loop, _ in
            let modeA = RunLoop.Mode("A")
            let modeB = RunLoop.Mode("B")
            let traceA = Trace()
            let traceB = Trace()
            loop.add(traceA.observer(), forMode: modeA)
            loop.add(traceB.observer(), forMode: modeB)
            let timer = RunLoopTimer(after: .milliseconds(50)) { _ in traceA.append("T") }
            loop.add(timer, forMode: modeA)
            loop.add(timer, forMode: modeB)
            let resultA = try loop.run(modeA, timeout: .seconds(1))
            let inA = loop.contains(timer, forMode: modeA)
            let inB = loop.contains(timer, forMode: modeB)
            let resultB = try loop.run(modeB, timeout: .seconds(1))
            return (traceA.events, resultA, inA, inB, timer.isValid, traceB.events, resultB)
        }
        #expect(eventsA == tokens("E BT BS BW AW T X"))
        #expect(resultA == .finished)
        #expect(!inA && !inB, "a fired one-shot leaves every mode")
        #expect(!valid)
        #expect(resultB == .finished)
        #expect(eventsB.isEmpty, "an empty mode runs no observer")
    }

    @Test("§9.36 common modes")
    func commonModes() async throws {
        let result = try await onManualClockLoop { loop, _ in
            let modeX = RunLoop.Mode("X")
            let modeY = RunLoop.Mode("Y")
            let log = Trace()
            let trace = Trace()
            let source = hookLoggingSource(log: log) { _ in log.append("S") }
            loop.add(source, forMode: .common)  // schedule(default)
            loop.addCommonMode(modeX)  // schedule(X)
            let timer = RunLoopTimer(after: .milliseconds(50), label: "T") { _ in
                trace.append("T(cur=\(loop.currentMode.map(modeName) ?? "nil"))")
            }
            loop.add(timer, forMode: .common)
            loop.addCommonMode(modeY)  // schedule(Y), and the timer joins Y
            let scheduled = log.events
            let timerModes = [RunLoop.Mode.default, modeX, modeY, .common].map { loop.contains(timer, forMode: $0) }
            let sourceInY = loop.contains(source, forMode: modeY)
            loop.add(trace.observer(), forMode: modeY)
            let runResult = try loop.run(modeY, timeout: .milliseconds(200))
            log.reset()
            loop.remove(source, forMode: .common)
            let cancelled = log.events
            let sourceModes = [RunLoop.Mode.default, modeX, modeY, .common].map { loop.contains(source, forMode: $0) }
            return (scheduled, timerModes, sourceInY, trace.events, runResult, cancelled, sourceModes)
        }
        let (scheduled, timerModes, sourceInY, events, runResult, cancelled, sourceModes) = result
        #expect(scheduled == ["schedule(default)", "schedule(X)", "schedule(Y)"])
        #expect(timerModes == [true, true, true, true])
        #expect(sourceInY)
        // The timer fires with Y current; S (never signalled) keeps Y alive until the timeout.
        #expect(events == tokens("E BT BS BW AW T(cur=Y) BT BS BW AW X"))
        #expect(runResult == .timedOut)
        // CF walks its common-mode set, whose order is unspecified: compare as a set.
        #expect(cancelled.sorted() == ["cancel(X)", "cancel(Y)", "cancel(default)"])
        #expect(sourceModes == [false, false, false, false])
    }

    @Test("§9.37 common removal drops explicit registration")
    func commonRemovalDropsExplicitRegistration() async throws {
        let result = try await onManualClockLoop { loop, _ in
            let modeX = RunLoop.Mode("X")
            let log = Trace()
            let trace = Trace()
            let source = hookLoggingSource(log: log) { _ in log.append("S") }
            loop.addCommonMode(modeX)
            loop.add(source, forMode: modeX)  // explicit: schedule(X)
            loop.add(source, forMode: .common)  // X already holds it: schedule(default) only
            let scheduled = log.events
            log.reset()
            loop.remove(source, forMode: .common)
            let cancelled = log.events
            let modes = [RunLoop.Mode.default, modeX, .common].map { loop.contains(source, forMode: $0) }
            loop.add(trace.observer(), forMode: modeX)
            let runResult = try loop.run(modeX, timeout: .milliseconds(100))
            return (scheduled, cancelled, modes, trace.events, runResult, source.isValid)
        }
        let (scheduled, cancelled, modes, events, runResult, valid) = result
        #expect(scheduled == ["schedule(X)", "schedule(default)"])
        #expect(cancelled.sorted() == ["cancel(X)", "cancel(default)"])
        #expect(modes == [false, false, false], "gone from X too, although it was added there explicitly")
        #expect(runResult == .finished)
        #expect(events.isEmpty)
        #expect(valid, "removal is not invalidation")
    }
    @Test("§9.41 a mode only made common exists")
    func modeOnlyMadeCommon() async throws {
        let result = try await onManualClockLoop { loop, clock in
            let mode = RunLoop.Mode("C")
            loop.addCommonMode(mode)
            let listed = loop.allModes.contains(mode)
            let start = clock.now
            let empty = try loop.run(mode, timeout: .seconds(1))
            let emptyElapsed = clock.now - start
            let trace = Trace()
            loop.add(trace.observer(), forMode: mode)
            loop.add(RunLoopTimer(after: .milliseconds(50)) { _ in trace.append("T") }, forMode: .common)
            let withTimer = try loop.run(mode, timeout: .seconds(1))
            return (listed, empty, emptyElapsed, trace.events, withTimer)
        }
        let (listed, empty, emptyElapsed, events, withTimer) = result
        #expect(listed, "making a mode common creates it")
        // As CF: an existing empty mode, not an unknown one (§9.1, §9.2).
        #expect(empty == .finished)
        #expect(emptyElapsed == .zero)
        #expect(events == tokens("E BT BS BW AW T X"), "a common timer added later fires in it")
        #expect(withTimer == .finished)
    }

    @Test("§9.42 common removal leaves a registration that was never common")
    func commonRemovalLeavesNonCommonRegistration() async throws {
        let result = try await onManualClockLoop { loop, _ in
            let log = Trace()
            let trace = Trace()
            let source = hookLoggingSource(log: log) { _ in trace.append("S") }
            let timer = RunLoopTimer(after: .milliseconds(50)) { _ in trace.append("T") }
            let observer = trace.observer()
            let pipe = try makePipe()
            defer {
                close(pipe.read)
                close(pipe.write)
            }
            let port = try RunLoopPortSource(fileDescriptor: pipe.read, label: "P") { _, _ in }
            // Each only in the default mode, which is common, but none added to `.common`.
            loop.add(source)
            loop.add(timer)
            loop.add(observer)
            try loop.add(port)
            loop.remove(source, forMode: .common)
            loop.remove(timer, forMode: .common)
            loop.remove(observer, forMode: .common)
            loop.remove(port, forMode: .common)
            let kept = [loop.contains(source), loop.contains(timer), loop.contains(observer), loop.contains(port)]
            let cancelled = log.events.filter { $0.hasPrefix("cancel") }
            loop.remove(port)
            source.signal()
            let runResult = try loop.run(.default, timeout: .milliseconds(100))
            source.invalidate()
            return (kept, cancelled, trace.events, runResult)
        }
        let (kept, cancelled, events, runResult) = result
        // CF undoes only common membership: items never added to `.common` stay where they were.
        #expect(kept == [true, true, true, true])
        #expect(cancelled.isEmpty)
        #expect(events == tokens("E BT BS S BT BS BW AW T BT BS BW AW X"))
        #expect(runResult == .timedOut)
    }
}
