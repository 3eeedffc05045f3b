import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// Signal dispositions are process-wide, so these tests run one at a time.
@Suite(.serialized) struct SignalSourceTests {
    @Test func raisedSignalIsDeliveredOnTheLoopThread() async throws {
        let (count, result, onLoopThread) = try await onLoopThread {
            let loop = RunLoop.current
            var count = 0
            var onLoopThread = false
            let source = try RunLoopSignalSource(signal: SIGUSR1) { _, deliveries in
                count += deliveries
                onLoopThread = loop.isCurrentThread
            }
            try loop.add(source, forMode: .default)
            raise(SIGUSR1)
            let result = try loop.run(.default, timeout: .seconds(2), returnAfterSourceHandled: true)
            source.invalidate()
            return (count, result, onLoopThread)
        }
        #expect(count == 1)
        #expect(result == .handledSource)
        #expect(onLoopThread)
    }

    @Test func deliveriesBeforeTheLoopRunsAreCoalescedWithACount() async throws {
        let (counts) = try await onLoopThread {
            let loop = RunLoop.current
            var counts: [Int] = []
            let source = try RunLoopSignalSource(signal: SIGUSR2) { _, deliveries in counts.append(deliveries) }
            try loop.add(source, forMode: .default)
            raise(SIGUSR2)
            raise(SIGUSR2)
            raise(SIGUSR2)
            try loop.run(.default, timeout: .seconds(2), returnAfterSourceHandled: true)
            source.invalidate()
            return counts
        }
        #expect(counts == [3])
    }

    @Test func sigtermStopsTheDaemonCleanly() async throws {
        let (result, cleanedUp) = try await onLoopThread {
            let loop = RunLoop.current
            var cleanedUp = false
            loop.add(RunLoopTimer(after: .seconds(60), repeating: .seconds(60)) { _ in }, forMode: .default)
            let source = try RunLoopSignalSource(signal: SIGTERM) { _, _ in loop.stop() }
            try loop.add(source, forMode: .common)
            startThread {
                while !loop.isWaiting { sleep(milliseconds: 1) }
                kill(getpid(), SIGTERM)
            }
            let result = try loop.run(.default, timeout: .seconds(5))
            source.invalidate()
            cleanedUp = true
            return (result, cleanedUp)
        }
        #expect(result == .stopped)
        #expect(cleanedUp)
    }

    @Test func everySourceForASignalSeesEachDelivery() async throws {
        let counts = try await onLoopThread {
            let loop = RunLoop.current
            var counts = [0, 0]
            let first = try RunLoopSignalSource(signal: SIGHUP) { _, n in counts[0] += n }
            let second = try RunLoopSignalSource(signal: SIGHUP) { _, n in counts[1] += n }
            try loop.add(first, forMode: .default)
            try loop.add(second, forMode: "Other")
            raise(SIGHUP)
            try loop.run(.default, timeout: .zero)
            try loop.run("Other", timeout: .zero)
            first.invalidate()
            second.invalidate()
            return counts
        }
        #expect(counts == [1, 1])
    }

    @Test func previousDispositionReturnsWhenTheLastSourceGoes() async throws {
        let restored = try await onLoopThread {
            var before = sigaction()
            sigaction(SIGUSR1, nil, &before)
            let source = try RunLoopSignalSource(signal: SIGUSR1) { _, _ in }
            var during = sigaction()
            sigaction(SIGUSR1, nil, &during)
            source.invalidate()
            var after = sigaction()
            sigaction(SIGUSR1, nil, &after)
            let handler = { (action: sigaction) in unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self) }
            return handler(before) == handler(after) && handler(during) != handler(before)
        }
        #expect(restored)
    }

    @Test func uncatchableSignalsAreTypedErrors() {
        let kill = caught { () throws(RunLoopError) in _ = try RunLoopSignalSource(signal: SIGKILL) { _, _ in } }
        let stop = caught { () throws(RunLoopError) in _ = try RunLoopSignalSource(signal: SIGSTOP) { _, _ in } }
        let outOfRange = caught { () throws(RunLoopError) in _ = try RunLoopSignalSource(signal: 4242) { _, _ in } }
        #expect(kill == .invalidSignal(SIGKILL))
        #expect(stop == .invalidSignal(SIGSTOP))
        #expect(outOfRange == .invalidSignal(4242))
    }
}
