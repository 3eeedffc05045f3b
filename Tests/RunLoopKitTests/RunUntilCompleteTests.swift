import RunLoopKit
import RunLoopTesting
import Testing

/// `run(untilComplete:)`, the bridge from a thread into async code on its loop, and `sleep(for:)` on
/// the loop's own timers. On a manual clock: the sleeps take virtual time.
@Suite struct RunUntilCompleteTests {
    struct Failure: Error, Equatable {
        let code: Int
    }

    @Test("returns the operation's value, computed on the loop's thread")
    func returnsTheValue() async throws {
        let (value, onLoop) = try await onManualClockLoop { loop, _ in
            try loop.run { (42, loop.isCurrentThread) }
        }
        #expect(value == 42)
        #expect(onLoop)
    }

    @Test("rethrows the operation's error")
    func rethrowsTheError() async throws {
        let thrown = try await onManualClockLoop { loop, _ -> Failure? in
            do {
                _ = try loop.run { () async throws -> Int in throw Failure(code: 7) }
                return nil
            } catch let failure as Failure {
                return failure
            }
        }
        #expect(thrown == Failure(code: 7))
    }

    @Test("an operation that sleeps on the loop's timers takes the loop's time, while its timers keep firing")
    func sleepsOnTheLoopsTimers() async throws {
        let (slept, ticks, nextTimer) = try await onManualClockLoop { loop, _ in
            let ticks = LockedBox(0)
            let tick = RunLoopTimer(after: .seconds(1), repeating: .seconds(1)) { _ in ticks.update { $0 += 1 } }
            loop.add(tick, forMode: .default)
            let start = loop.now
            let slept = try loop.run {
                try await loop.sleep(for: .milliseconds(10_500))
                return loop.now - start
            }
            tick.invalidate()
            return (slept, ticks.get(), loop.nextTimerFireDate(forMode: .default))
        }
        #expect(slept == .milliseconds(10_500))
        #expect(ticks == 10)
        #expect(nextTimer == nil)
    }

    @Test("waits for an operation that completes on another executor")
    func waitsForWorkOnAnotherExecutor() async throws {
        let (value, backOnLoop) = try await onManualClockLoop { loop, _ in
            try loop.run {
                let value = await Task.detached { 6 * 7 }.value
                return (value, loop.isCurrentThread)
            }
        }
        #expect(value == 42)
        #expect(backOnLoop)
    }

    @Test("cancelling a sleeping task ends its sleep at once with CancellationError and removes its timer")
    func cancellingASleepEndsIt() async throws {
        let (outcome, elapsed, leftTimer) = try await onManualClockLoop { loop, _ in
            let start = loop.now
            let outcome = try loop.run {
                let sleeper = Task(executorPreference: loop) { try await loop.sleep(for: .seconds(3600)) }
                try await loop.sleep(for: .seconds(1))
                sleeper.cancel()
                do {
                    try await sleeper.value
                    return "slept"
                } catch is CancellationError {
                    return "cancelled"
                }
            }
            return (outcome, loop.now - start, loop.nextTimerFireDate(forMode: .default))
        }
        #expect(outcome == "cancelled")
        #expect(elapsed == .seconds(1))
        #expect(leftTimer == nil)
    }

    @Test("a task cancelled before it sleeps throws without sleeping")
    func cancelledTaskDoesNotSleep() async throws {
        let (outcome, elapsed) = try await onManualClockLoop { loop, _ in
            let start = loop.now
            let outcome = try loop.run { () async -> String in
                withUnsafeCurrentTask { $0?.cancel() }
                do {
                    try await loop.sleep(for: .seconds(60))
                    return "slept"
                } catch {
                    return "\(type(of: error))"
                }
            }
            return (outcome, loop.now - start)
        }
        #expect(outcome == "CancellationError")
        #expect(elapsed == .zero)
    }

    @Test("stop() ends only the current activation: the run goes on until the operation completes")
    func stopDoesNotAbandonTheOperation() async throws {
        let value = try await onManualClockLoop { loop, _ in
            try loop.run {
                loop.stop()
                try await loop.sleep(for: .seconds(5))
                return "completed"
            }
        }
        #expect(value == "completed")
    }

    @Test("a run nested in a callout ends when its own operation completes, not the outer run")
    func nestedRunEndsItsOwnActivation() async throws {
        let log = try await onManualClockLoop { loop, _ in
            let log = LockedBox<[String]>([])
            let outer = try loop.run {
                try await loop.sleep(for: .seconds(10))
                return "outer"
            }
            log.update { $0.append(outer) }
            loop.add(
                RunLoopTimer(after: .seconds(1)) { _ in
                    let inner = try? loop.run {
                        try await loop.sleep(for: .seconds(2))
                        return "inner"
                    }
                    log.update { $0.append(inner ?? "failed") }
                }, forMode: .default)
            let last = try loop.run {
                try await loop.sleep(for: .seconds(5))
                return "last"
            }
            log.update { $0.append(last) }
            return log.get()
        }
        #expect(log == ["outer", "inner", "last"])
    }

    @Test("misuse is refused before the operation starts: a private mode, the common pseudo-mode, from inside a job")
    func misuseIsRefused() async throws {
        let (privateMode, common, insideJob) = try await onManualClockLoop { loop, _ in
            let modal = RunLoop.Mode("modal")
            let privateMode = Self.refusal { try loop.run(modal) { 1 } }
            let common = Self.refusal { try loop.run(.common) { 1 } }
            // The operation runs as a job of the loop: a run started from it would wait for itself.
            let insideJob = try loop.run { Self.refusal { try loop.run { 1 } } }
            return (privateMode, common, insideJob)
        }
        #expect(privateMode == .notACommonMode(RunLoop.Mode("modal")))
        #expect(common == .commonModesNotRunnable)
        #expect(insideJob == .insideExecutorJob)
    }

    /// The loop's refusal of `body`, or nil if it ran.
    static func refusal(_ body: () throws -> Int) -> RunLoopError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? RunLoopError
        }
    }
}
