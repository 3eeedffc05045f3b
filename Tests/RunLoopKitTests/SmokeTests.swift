import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

@Suite struct SmokeTests {
    @Test func backendIsEpoll() async throws {
        let method = try await onLoopThread { RunLoop.current.backendMethod }
        #expect(method == "epoll")
    }

    @Test func oneShotTimerTraceOnManualClock() async throws {
        let (events, result, elapsed) = try await onManualClockLoop { loop, clock in
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            loop.add(trace.observer(), forMode: mode)
            let start = clock.now
            loop.add(RunLoopTimer(after: .milliseconds(50)) { _ in trace.append("T") }, forMode: mode)
            let result = try loop.run(mode, timeout: .seconds(1))
            return (trace.events, result, clock.now - start)
        }
        #expect(events == tokens("E BT BS BW AW T X"))
        #expect(result == .finished)
        #expect(elapsed == .milliseconds(50))
    }

    @Test func oneShotTimerOnSystemClock() async throws {
        let (events, result) = try await onLoopThread {
            let loop = RunLoop.current
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            loop.add(trace.observer(), forMode: mode)
            loop.add(RunLoopTimer(after: .milliseconds(5)) { _ in trace.append("T") }, forMode: mode)
            let result = try loop.run(mode, timeout: .seconds(2))
            return (trace.events, result)
        }
        #expect(matchesAllowingSpuriousWakes(events, tokens("E BT BS BW AW T X")), "\(events)")
        #expect(result == .finished)
    }
}
