import RunLoopKit
import RunLoopTesting
import Testing

/// `spin`'s and `runUntil`'s limits end hangs; time in which the loop could not run (a stalled
/// process) does not count.
/// Virtual time: a timer's callout jumps the manual clock, as a stall of the whole process would.
@Suite struct SpinTests {
    /// A timer ticking every 5 ms that jumps the clock by `stall` once, in tick number `stallAfter`.
    final class Ticker {
        let timer: RunLoopTimer
        private let counter: Counter
        var count: Int { counter.value }

        init(loop: RunLoop, clock: ManualClock, stall: Duration?, stallAfter: Int = 2) {
            let counter = Counter()
            self.counter = counter
            timer = RunLoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in
                counter.value += 1
                if counter.value == stallAfter, let stall { clock.advance(by: stall) }
            }
            loop.add(timer, forMode: .default)
        }
    }

    final class Counter { var value = 0 }

    @Test func aStallOfTheWholeProcessDoesNotUseUpTheLimit() async throws {
        let outcome = try await onManualClockLoop { loop, clock in
            let ticker = Ticker(loop: loop, clock: clock, stall: .seconds(40))
            defer { ticker.timer.invalidate() }
            let started = loop.now
            // Five ticks after the stall: the loop had its chance to move after the 40 s it could not.
            let done = try spin(loop, for: .seconds(30)) { ticker.count >= 8 }
            return (done, loop.now - started)
        }
        #expect(outcome.0, "the condition held a few ticks after the stall")
        #expect(outcome.1 > .seconds(40) && outcome.1 < .seconds(41))
    }

    @Test func aLoopThatRunsButNeverGetsThereFailsAtTheLimit() async throws {
        let outcome = try await onManualClockLoop { loop, clock in
            let ticker = Ticker(loop: loop, clock: clock, stall: nil)
            defer { ticker.timer.invalidate() }
            let started = loop.now
            let done = try spin(loop, for: .seconds(2)) { false }
            return (done, loop.now - started)
        }
        #expect(!outcome.0)
        #expect(outcome.1 >= .seconds(2) && outcome.1 < .milliseconds(2_010))
    }

    @Test func forgivenStallsAreCappedAtTheLimitAgain() async throws {
        let outcome = try await onManualClockLoop { loop, clock in
            // A stall longer than twice the limit: the spin gives up instead of waiting it out.
            let ticker = Ticker(loop: loop, clock: clock, stall: .seconds(100))
            defer { ticker.timer.invalidate() }
            let ticksAtEnd = Counter()
            let done = try spin(loop, for: .seconds(30)) {
                ticksAtEnd.value = ticker.count
                return ticker.count >= 1_000_000
            }
            return (done, ticksAtEnd.value)
        }
        #expect(!outcome.0)
        #expect(outcome.1 <= 3, "it stopped right after the stall, not 30 s of ticks later: \(outcome.1) ticks")
    }

    @Test func runUntilForgivesAStallToo() async throws {
        let outcome = try await onManualClockLoop { loop, clock in
            let ticker = Ticker(loop: loop, clock: clock, stall: .seconds(40))
            defer { ticker.timer.invalidate() }
            let started = loop.now
            let done = try loop.runUntil(timeout: .seconds(30)) { ticker.count >= 8 }
            return (done, loop.now - started)
        }
        #expect(outcome.0, "the condition held a few ticks after the stall")
        #expect(outcome.1 > .seconds(40) && outcome.1 < .seconds(41))
    }
}
