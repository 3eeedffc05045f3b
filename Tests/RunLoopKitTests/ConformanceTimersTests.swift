import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// docs/BEHAVIOUR.md §9 on RunLoopKit, timers: one-shot timers, polls, late repeating timers, rescheduling inside the callout, due-timer order, moving a timer inside its callout (scenarios 3, 5–6, 30–34, 43).
///
/// How these tests run (a manual clock, a thread per loop, trace tokens): see Support/Conformance.swift.
@Suite("§9 timers (scenarios 3, 5–6, 30–34, 43)") struct ConformanceTimersTests {
    @Test("§9.3 one-shot timer") func oneShotTimer() async throws {
        let runs = try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            loop.add(trace.observer(), forMode: mode)
            var runs: [([String], RunLoop.RunResult, Duration, Bool)] = []
            for returnAfterSourceHandled in [false, true] {
                trace.reset()
                let timer = RunLoopTimer(after: .milliseconds(50)) { _ in trace.append("T") }
                let start = clock.now
                loop.add(timer, forMode: mode)
                let result = try loop.run(mode, timeout: .seconds(1), returnAfterSourceHandled: returnAfterSourceHandled)
                runs.append((trace.events, result, clock.now - start, timer.isValid))
            }
            return runs
        }
        for (index, (events, result, elapsed, timerIsValid)) in runs.enumerated() {
            let label = index == 0 ? "ras=false" : "ras=true"
            #expect(events == tokens("E BT BS BW AW T X"), "\(label)")
            // A timer is not a source: ras=true still ends with finished, not handledSource.
            #expect(result == .finished, "\(label)")
            #expect(elapsed == .milliseconds(50), "\(label)")
            #expect(!timerIsValid, "a one-shot timer is invalidated after it fires (\(label))")
        }
    }

    @Test("§9.5 poll, future timer") func pollFutureTimer() async throws {
        let runs = try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            loop.add(trace.observer(), forMode: mode)
            let timer = RunLoopTimer(after: .milliseconds(500)) { _ in trace.append("T") }
            loop.add(timer, forMode: mode)
            var runs: [([String], RunLoop.RunResult, Duration, Bool)] = []
            // Zero polls; so does a negative timeout (seconds <= 0, §1.5).
            for timeout in [Duration.zero, .milliseconds(-10)] {
                trace.reset()
                let start = clock.now
                let result = try loop.run(mode, timeout: timeout)
                runs.append((trace.events, result, clock.now - start, timer.isValid))
            }
            timer.invalidate()
            return runs
        }
        for (events, result, elapsed, timerIsValid) in runs {
            #expect(events == tokens("E BT BS X"))
            #expect(result == .timedOut)
            #expect(elapsed == .zero)
            #expect(timerIsValid, "the timer is not fired by the poll")
        }
    }

    @Test("§9.6 poll, due timers") func pollDueTimers() async throws {
        let (events, result, emptyAfter, reversedEvents) = try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            loop.add(trace.observer(), forMode: mode)
            loop.add(RunLoopTimer(fireAt: clock.now - .seconds(1)) { _ in trace.append("T1") }, forMode: mode)
            loop.add(RunLoopTimer(fireAt: clock.now - .milliseconds(500)) { _ in trace.append("T2") }, forMode: mode)
            let result = try loop.run(mode, timeout: .zero, returnAfterSourceHandled: true)
            let events = trace.events
            trace.reset()
            // Both fired, so M is empty now; the poll above still reported timedOut.
            let emptyAfter = try loop.run(mode, timeout: .zero)

            // Deviation (f): initial fire dates in the past are kept as given, so due timers fire in date
            // order even when added in the opposite order. (CFRunLoop clamps a past date to "now" at
            // creation, which would make creation order decide here.)
            trace.reset()
            let second = RunLoopTimer(fireAt: clock.now - .milliseconds(500)) { _ in trace.append("T2") }
            let first = RunLoopTimer(fireAt: clock.now - .seconds(1)) { _ in trace.append("T1") }
            loop.add(second, forMode: mode)
            loop.add(first, forMode: mode)
            _ = try loop.run(mode, timeout: .zero, returnAfterSourceHandled: true)
            return (events, result, emptyAfter, trace.events)
        }
        #expect(events == tokens("E BT BS T1 T2 X"))
        #expect(result == .timedOut, "a poll never reports finished, even though M is now empty")
        #expect(emptyAfter == .finished)
        #expect(reversedEvents == tokens("E BT BS T1 T2 X"))
    }

    @Test("§9.30 late repeating timer: callback overrun")
    func lateRepeatingTimerCallbackOverrun() async throws {
        let (events, result, fires, servicedDate) = try await onManualClockLoop { loop, clock in
            let mode = RunLoop.Mode("M")
            let trace = Trace()
            loop.add(trace.observer(), forMode: mode)
            let start = clock.now
            var fires: [Duration] = []
            var servicedDate: Duration?
            loop.add(
                RunLoopTimer(after: .milliseconds(100), repeating: .milliseconds(100)) { timer in
                    fires.append(clock.now - start)
                    trace.append("T")
                    if fires.count == 1 {
                        clock.advance(by: .milliseconds(350))  // the callback "blocks" 0.35 s
                        servicedDate = timer.nextFireDate.map { $0 - start }
                    }
                    if fires.count == 3 { timer.invalidate() }
                }, forMode: mode)
            let result = try loop.run(mode, timeout: .seconds(5))
            return (trace.events, result, fires, servicedDate)
        }
        #expect(fires == [.milliseconds(100), .milliseconds(500), .milliseconds(600)], "no burst, phase kept")
        #expect(servicedDate == .milliseconds(100), "inside the callout nextFireDate is the date being serviced")
        // Exact: the `clock.advance` inside the callout must not wake this loop (it is not asleep), just as
        // a real 0.35 s block would not; otherwise one spurious `BW AW BT BS` cycle precedes tick 2.
        #expect(events == tokens("E BT BS BW AW T BT BS BW AW T BT BS BW AW T X"))
        #expect(result == .finished)
    }

    @Test("§9.31 late repeating timer: loop busy")
    func lateRepeatingTimerLoopBusy() async throws {
        let (events, result, fires) = try await onManualClockLoop { loop, clock in
            let mode = RunLoop.Mode("M")
            let trace = Trace()
            loop.add(trace.observer(), forMode: mode)
            let start = clock.now
            let busy = RunLoopSource(label: "S") { _ in
                trace.append("S")
                clock.advance(by: .milliseconds(350))  // the source "blocks" 0.35 s
            }
            loop.add(busy, forMode: mode)
            busy.signal()
            var fires: [Duration] = []
            loop.add(
                RunLoopTimer(after: .milliseconds(100), repeating: .milliseconds(100)) { timer in
                    fires.append(clock.now - start)
                    trace.append("T")
                    if fires.count == 3 {
                        timer.invalidate()
                        busy.invalidate()  // empties the mode so the run finishes
                    }
                }, forMode: mode)
            let result = try loop.run(mode, timeout: .seconds(5))
            return (trace.events, result, fires)
        }
        #expect(fires == [.milliseconds(350), .milliseconds(400), .milliseconds(500)], "one late fire, phase kept")
        #expect(events == tokens("E BT BS S T BT BS BW AW T BT BS BW AW T X"))
        #expect(result == .finished)
    }

    @Test("§9.32 SetNextFireDate inside the callout")
    func setNextFireDateInsideCallout() async throws {
        let (events, result, fires) = try await onManualClockLoop { loop, clock in
            let mode = RunLoop.Mode("M")
            let trace = Trace()
            loop.add(trace.observer(), forMode: mode)
            let start = clock.now
            var fires: [Duration] = []
            loop.add(
                RunLoopTimer(after: .milliseconds(50), repeating: .milliseconds(50)) { timer in
                    fires.append(clock.now - start)
                    trace.append("T")
                    switch fires.count {
                    case 1: timer.nextFireDate = clock.now + .milliseconds(300)
                    case 2: timer.nextFireDate = clock.now - .seconds(1)  // a past date: "as soon as possible"
                    default: timer.invalidate()
                    }
                }, forMode: mode)
            let result = try loop.run(mode, timeout: .seconds(5))
            return (trace.events, result, fires)
        }
        #expect(fires == [.milliseconds(50), .milliseconds(350), .milliseconds(350)])
        #expect(events == tokens("E BT BS BW AW T BT BS BW AW T BT BS BW AW T X"))
        #expect(result == .finished)
    }

    @Test("§9.33 invalidate inside own callback")
    func invalidateInsideOwnCallback() async throws {
        let (events, result, validity, fires) = try await onManualClockLoop { loop, clock in
            let mode = RunLoop.Mode("M")
            let trace = Trace()
            loop.add(trace.observer(), forMode: mode)
            let start = clock.now
            var validity: [Bool] = []
            var fires: [Duration] = []
            loop.add(
                RunLoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { timer in
                    fires.append(clock.now - start)
                    trace.append("T")
                    validity.append(timer.isValid)
                    timer.invalidate()
                    validity.append(timer.isValid)
                }, forMode: mode)
            let result = try loop.run(mode, timeout: .seconds(5))
            return (trace.events, result, validity, fires)
        }
        #expect(fires == [.milliseconds(10)], "one tick only")
        #expect(validity == [true, false])
        #expect(events == tokens("E BT BS BW AW T X"))
        #expect(result == .finished)
    }

    @Test("§9.34 due timers order")
    func dueTimersOrder() async throws {
        let (events, result) = try await onManualClockLoop { loop, clock in
            let mode = RunLoop.Mode("M")
            let trace = Trace()
            loop.add(trace.observer(), forMode: mode)
            // CF's X(order 9) and Y(order −9): RunLoopTimer has no `order` at all, so date then scheduling
            // order is all there is. Past initial fire dates are kept as given (documented deviation (f)
            // from CF, which clamps them to "now"), so Z, 10 ms earlier, comes first.
            let date = clock.now - .milliseconds(100)
            for (name, fireAt) in [("X", date), ("Y", date), ("Z", date - .milliseconds(10))] {
                loop.add(RunLoopTimer(fireAt: fireAt, label: name) { _ in trace.append("T:" + name) }, forMode: mode)
            }
            let result = try loop.run(mode, timeout: .zero)
            return (trace.events, result)
        }
        #expect(events == tokens("E BT BS T:Z T:X T:Y X"))
        #expect(result == .timedOut, "a poll times out even when its timers emptied the mode")
    }
    /// Where a repeating timer (first fire at 50 ms, interval 100 ms) fires next after its first
    /// callout takes it out of mode A, sets its next fire date to 30 ms later and adds it to `target`
    /// (during the callout, or only once the run of A has returned).
    private func movedTimerFires(
        addingTo target: String, afterTheCallout: Bool = false
    ) async throws -> (first: RunLoop.RunResult, fires: [String]) {
        try await onManualClockLoop { loop, clock in
            let modeA = RunLoop.Mode("A")
            let destination = RunLoop.Mode(target)
            let start = clock.now
            var fires: [String] = []
            let timer = RunLoopTimer(after: .milliseconds(50), repeating: .milliseconds(100)) { timer in
                fires.append("\(loop.currentMode?.rawValue ?? "nil")@\(Int((clock.now - start) / .milliseconds(1)))")
                guard fires.count == 1 else { return timer.invalidate() }
                loop.remove(timer, forMode: modeA)
                timer.nextFireDate = clock.now + .milliseconds(30)
                if !afterTheCallout { loop.add(timer, forMode: destination) }
            }
            loop.add(timer, forMode: modeA)
            let first = try loop.run(modeA, timeout: .seconds(1))
            if afterTheCallout { loop.add(timer, forMode: destination) }
            try loop.run(destination, timeout: .seconds(1))
            return (first, fires)
        }
    }

    @Test("§9.43 timer moved to another mode inside its callout keeps its new date")
    func timerMovedInsideItsCalloutKeepsItsNewDate() async throws {
        let (first, fires) = try await movedTimerFires(addingTo: "B")
        #expect(first == .finished, "A lost its only timer")
        // CF honours the date set in the callout; the interval schedule would give 150 ms.
        #expect(fires == ["A@50", "B@80"])
    }

    @Test("§9.43 timer removed and added back inside its callout keeps its new date")
    func timerAddedBackInsideItsCalloutKeepsItsNewDate() async throws {
        let (first, fires) = try await movedTimerFires(addingTo: "A")
        #expect(first == .finished, "the second fire, in the same run of A, invalidates it")
        #expect(fires == ["A@50", "A@80"])
    }

    @Test("§9.43 timer re-dated out of every mode keeps its new date when added after the callout")
    func timerRedatedOutOfEveryModeKeepsItsNewDate() async throws {
        let (first, fires) = try await movedTimerFires(addingTo: "B", afterTheCallout: true)
        #expect(first == .finished)
        #expect(fires == ["A@50", "B@80"])
    }

    /// CF quirk, not followed: CF leaves the kernel timer armed at the invalidated timer's date, wakes
    /// then and finds the mode empty; RunLoopKit disarmed it and sleeps to the run's timeout (§3.2).
    @Test("a mode's only timer invalidated from a beforeWaiting observer: the run sleeps to its timeout")
    func onlyTimerInvalidatedBeforeWaiting() async throws {
        let (events, result, elapsed) = try await onManualClockLoop { loop, clock in
            let mode = RunLoop.Mode("M")
            let trace = Trace()
            let timer = RunLoopTimer(after: .milliseconds(50)) { _ in trace.append("T") }
            let invalidator = RunLoopObserver(activities: .beforeWaiting, repeats: false) { _, _ in timer.invalidate() }
            loop.add(invalidator, forMode: mode)
            loop.add(trace.observer(), forMode: mode)
            loop.add(timer, forMode: mode)
            let (result, elapsed) = try timedRun(loop, mode, timeout: .seconds(1), on: clock)
            return (trace.events, result, elapsed)
        }
        #expect(events == tokens("E BT BS BW AW X"))
        // CF: finished at 50 ms, the old date.
        #expect(result == .timedOut)
        #expect(elapsed == .seconds(1))
    }
}
