import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// docs/BEHAVIOUR.md §9 on RunLoopKit, observers: order, one-shot observers, observers added during a notification, no re-entry (scenarios 24–26).
///
/// How these tests run (a manual clock, a thread per loop, trace tokens): see Support/Conformance.swift.
@Suite("§9 observers (scenarios 24–26)") struct ConformanceObserversTests {
    @Test("§9.24 observer order and one-shot observer")
    func observerOrderAndOneShotObserver() async throws {
        let (events, result, onceValid, onceContained) = try await onManualClockLoop { loop, _ in
            let mode = RunLoop.Mode("M")
            let trace = Trace()
            func beforeTimers(_ order: Int, _ name: String) -> RunLoopObserver {
                RunLoopObserver(activities: .beforeTimers, order: order, label: name) { _, _ in trace.append(name) }
            }
            loop.add(beforeTimers(5, "5a"), forMode: mode)
            loop.add(beforeTimers(-1, "-1"), forMode: mode)
            loop.add(beforeTimers(5, "5b"), forMode: mode)
            loop.add(beforeTimers(0, "0"), forMode: mode)
            let once = RunLoopObserver(activities: .allActivities, repeats: false, label: "once") { _, activity in
                trace.append("once:" + Trace.token(activity))
            }
            loop.add(once, forMode: mode)
            loop.add(RunLoopTimer(after: .milliseconds(50)) { _ in trace.append("T") }, forMode: mode)
            let result = try loop.run(mode, timeout: .seconds(1))
            return (trace.events, result, once.isValid, loop.contains(once, forMode: mode))
        }
        #expect(events == tokens("once:E -1 0 5a 5b T"))
        #expect(result == .finished)
        #expect(!onceValid, "a non-repeating observer is invalid after its first callout")
        #expect(!onceContained)
    }

    @Test("§9.25 observer added during a notification")
    func observerAddedDuringNotification() async throws {
        let (events, result) = try await onManualClockLoop { loop, _ in
            let mode = RunLoop.Mode("M")
            let trace = Trace()
            let late = RunLoopObserver(activities: [.beforeTimers, .beforeWaiting], label: "L") { _, activity in
                trace.append("L:" + Trace.token(activity))
            }
            var added = false
            let first = RunLoopObserver(activities: [.beforeTimers, .beforeWaiting], label: "A") { _, activity in
                trace.append("A:" + Trace.token(activity))
                if !added { added = true; loop.add(late, forMode: mode) }
            }
            loop.add(first, forMode: mode)
            loop.add(RunLoopTimer(after: .milliseconds(50)) { _ in trace.append("T") }, forMode: mode)
            let result = try loop.run(mode, timeout: .seconds(1))
            return (trace.events, result)
        }
        #expect(events == tokens("A:BT A:BW L:BW T"))
        #expect(result == .finished)
    }

    @Test("§9.26 observer not re-entered")
    func observerNotReentered() async throws {
        let (events, result, calls) = try await onManualClockLoop { loop, _ in
            let mode = RunLoop.Mode("M")
            let trace = Trace()
            loop.add(trace.observer(order: 0), forMode: mode)
            var calls = 0
            let nester = RunLoopObserver(activities: .beforeTimers, order: 1, label: "O") { _, _ in
                calls += 1
                trace.append("O")
                let nested = (try? loop.run(mode, timeout: .zero)).map { "\($0)" } ?? "threw"
                trace.append("nested=\(nested)")
            }
            loop.add(nester, forMode: mode)
            loop.add(RunLoopTimer(after: .milliseconds(50)) { _ in trace.append("T") }, forMode: mode)
            let result = try loop.run(mode, timeout: .seconds(1))
            return (trace.events, result, calls)
        }
        #expect(events == tokens("E BT O E BT BS X nested=timedOut BS BW AW T X"))
        #expect(result == .finished)
        #expect(calls == 1, "the observer in its callout is skipped by the nested activation")
    }
}
