import RunLoopKit
import RunLoopTesting
import Testing

/// Equal-order sources are performed in signal order across threads. Pins the property any cheaper
/// numbering of signals must keep (per-thread blocks of numbers were tried, RESULTS.md): a thread that
/// took numbers before another thread's later signal must not number its next signal below it.
@Suite struct SignalOrderAcrossThreadsTests {
    @Test func aSignalThatFollowsAnotherThreadsSignalIsPerformedAfterIt() async throws {
        let performed = try await onLoopThread { () -> [String] in
            let loop = RunLoop.current
            let mode = RunLoop.Mode("M")
            var performed: [String] = []
            let first = RunLoopSource(label: "first") { performed.append($0.label ?? "") }
            let second = RunLoopSource(label: "second") { performed.append($0.label ?? "") }
            // Added in the other order, so that the mode's list cannot put them in signal order by chance.
            loop.add(second, forMode: mode)
            loop.add(first, forMode: mode)
            let unattached = RunLoopSource { _ in }
            let helperReserved = Latch()
            let firstSignalled = Latch()
            let secondSignalled = Latch()
            startThread {
                // The helper takes a number before this thread does.
                unattached.signal()
                helperReserved.open()
                firstSignalled.wait()
                second.signal()
                secondSignalled.open()
            }
            helperReserved.wait()
            first.signal()
            firstSignalled.open()
            secondSignalled.wait()
            _ = try loop.run(mode, timeout: .zero)
            return performed
        }
        #expect(performed == ["first", "second"])
    }
}
