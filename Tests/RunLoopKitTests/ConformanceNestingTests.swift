import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// docs/BEHAVIOUR.md §9 on RunLoopKit, nested runs: in another mode, in the same mode, stop inside a nested run (scenarios 27–29).
///
/// How these tests run (a manual clock, a thread per loop, trace tokens): see Support/Conformance.swift.
@Suite("§9 nesting (scenarios 27–29)") struct ConformanceNestingTests {
    @Test("§9.27 nested run in another mode")
    func nestedRunInAnotherMode() async throws {
        let (events, result, otherFiredAt) = try await onManualClockLoop { loop, clock in
            let outer = RunLoop.Mode("Outer")
            let inner = RunLoop.Mode("Inner")
            let trace = Trace()
            loop.add(trace.observer([.entry, .exit], prefix: "out:"), forMode: outer)
            loop.add(trace.observer([.entry, .exit], prefix: "in:"), forMode: inner)
            func current() -> String { loop.currentMode?.rawValue ?? "nil" }
            let start = clock.now
            var otherFiredAt: Duration?
            loop.add(
                RunLoopTimer(after: .milliseconds(10), label: "outer") { _ in
                    trace.append("T:outer(cur=\(current()))")
                    loop.add(
                        RunLoopTimer(after: .milliseconds(30), label: "inner") { _ in
                            trace.append("T:inner(cur=\(current()))")
                        }, forMode: inner)
                    let nested = (try? loop.run(inner, timeout: .seconds(1))).map { "\($0)" } ?? "threw"
                    trace.append("inner=\(nested)(cur=\(current()))")
                }, forMode: outer)
            // Due at +20 ms, during the inner run (+10…+40 ms): fires only once the outer run resumes.
            loop.add(
                RunLoopTimer(after: .milliseconds(20), label: "outerOther") { _ in
                    otherFiredAt = clock.now - start
                    trace.append("T:outerOther")
                }, forMode: outer)
            let result = try loop.run(outer, timeout: .seconds(1))
            return (trace.events, result, otherFiredAt)
        }
        #expect(
            events
                == tokens(
                    "out:E T:outer(cur=Outer) in:E T:inner(cur=Inner) in:X inner=finished(cur=Outer) T:outerOther out:X"))
        #expect(result == .finished)
        #expect(otherFiredAt == .milliseconds(40), "the outer timer waits for the inner run to end")
    }

    @Test("§9.28 nested run in the same mode")
    func nestedRunInTheSameMode() async throws {
        let (events, result, times) = try await onManualClockLoop { loop, clock in
            let mode = RunLoop.Mode("M")
            let trace = Trace()
            loop.add(trace.observer([.entry, .exit]), forMode: mode)
            let start = clock.now
            var times: [String: Duration] = [:]
            var ticks = 0
            loop.add(
                RunLoopTimer(after: .milliseconds(20), repeating: .milliseconds(20), label: "R") { timer in
                    ticks += 1
                    times["R\(ticks)"] = clock.now - start
                    trace.append("R\(ticks)")
                    if ticks == 1 {
                        loop.add(
                            RunLoopTimer(after: .milliseconds(10), label: "other") { _ in
                                times["other"] = clock.now - start
                                trace.append("other")
                            }, forMode: mode)
                        let nested = (try? loop.run(mode, timeout: .milliseconds(100))).map { "\($0)" } ?? "threw"
                        trace.append("nested=\(nested)")
                    } else {
                        timer.invalidate()
                    }
                }, forMode: mode)
            let result = try loop.run(mode, timeout: .seconds(1))
            return (trace.events, result, times)
        }
        #expect(events == tokens("E R1 E other X nested=timedOut R2 X"))
        #expect(result == .finished)
        // R is skipped by the nested run; afterwards it keeps its phase (20 + k·20 after +120 ms).
        #expect(times == ["R1": .milliseconds(20), "other": .milliseconds(30), "R2": .milliseconds(140)])
    }

    @Test("§9.29 stop inside a nested run")
    func stopInsideNestedRun() async throws {
        let (events, result, outer2At) = try await onManualClockLoop { loop, clock in
            let outer = RunLoop.Mode("M")
            let inner = RunLoop.Mode("Inner")
            let trace = Trace()
            loop.add(trace.observer([.entry, .exit], prefix: "out:"), forMode: outer)
            loop.add(trace.observer([.entry, .exit], prefix: "in:"), forMode: inner)
            let start = clock.now
            var outer2At: Duration?
            loop.add(
                RunLoopTimer(after: .milliseconds(10), label: "outer1") { _ in
                    trace.append("T:outer1")
                    loop.add(
                        RunLoopTimer(after: .milliseconds(10), label: "inner") { _ in
                            trace.append("stop!")
                            loop.stop()
                        }, forMode: inner)
                    let nested = (try? loop.run(inner, timeout: .seconds(1))).map { "\($0)" } ?? "threw"
                    trace.append("inner=\(nested)")
                }, forMode: outer)
            loop.add(
                RunLoopTimer(after: .milliseconds(100), label: "outer2") { _ in
                    outer2At = clock.now - start
                    trace.append("T:outer2")
                }, forMode: outer)
            let result = try loop.run(outer, timeout: .seconds(1))
            return (trace.events, result, outer2At)
        }
        #expect(events == tokens("out:E T:outer1 in:E stop! in:X inner=stopped T:outer2 out:X"))
        #expect(result == .finished, "the stop ended only the inner activation")
        #expect(outer2At == .milliseconds(100))
    }
    /// CF quirk, not followed: when the outer run's timeout passes during a nested run, CF's timeout
    /// wake-up reaches the nested run, which goes one extra iteration (`in:BT in:BS in:BW in:AW`) before
    /// its timer. Here each activation's deadline wakes only itself: the nested run sleeps straight to
    /// its timer, and the outer run times out once the callout returns.
    @Test("outer run's timeout passing during a nested run: no extra nested iteration")
    func outerTimeoutDuringNestedRun() async throws {
        let (events, result, elapsed) = try await onManualClockLoop { loop, clock in
            let outer = RunLoop.Mode("M")
            let inner = RunLoop.Mode("Inner")
            let trace = Trace()
            loop.add(trace.observer([.entry, .exit], prefix: "out:"), forMode: outer)
            loop.add(trace.observer(prefix: "in:"), forMode: inner)
            loop.add(
                RunLoopTimer(after: .milliseconds(50), label: "outer") { _ in
                    trace.append("T:outer")
                    loop.add(RunLoopTimer(after: .milliseconds(100)) { _ in trace.append("T:inner") }, forMode: inner)
                    let nested = (try? loop.run(inner, timeout: .seconds(1))).map { "\($0)" } ?? "threw"
                    trace.append("inner=\(nested)")
                }, forMode: outer)
            let (result, elapsed) = try timedRun(loop, outer, timeout: .milliseconds(100), on: clock)
            return (trace.events, result, elapsed)
        }
        #expect(
            events
                == tokens("out:E T:outer in:E in:BT in:BS in:BW in:AW T:inner in:X inner=finished out:X"))
        #expect(result == .timedOut)
        #expect(elapsed == .milliseconds(150))
    }
}
