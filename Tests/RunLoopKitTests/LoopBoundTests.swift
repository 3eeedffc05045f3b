import RunLoopKit
import RunLoopTesting
import Testing

/// The loop-bound box: a non-Sendable value crosses a `@Sendable` hop and is read back on its own
/// loop's thread, and only there.
@Suite struct LoopBoundTests {
    /// Loop-confined state of the kind the box carries: a class that is not Sendable.
    final class Counter {
        var count = 0
    }

    @Test func aValueSentThroughAWorkerComesBackToItsLoopUnchanged() async throws {
        let (sameObject, count) = try await onLoopThread { () -> (Bool, Int) in
            let loop = RunLoop.current
            let counter = Counter()
            let bound = LoopBound(counter)
            var arrived: Counter?
            let back = LoopBound({ (value: Counter) in arrived = value }, loop: loop)
            let queued = Latch()
            startThread {
                loop.perform(inModes: [.default]) {
                    bound.value.count += 1
                    back.value(bound.value)
                }
                queued.open()
            }
            // Queued before the run, so the mode is not empty when it starts.
            queued.wait()
            _ = try loop.runUntil(timeout: .seconds(10)) { arrived != nil }
            return (arrived === counter, counter.count)
        }
        #expect(sameObject)
        #expect(count == 1)
    }

    @Test func aBoxMadeOnAnotherThreadForThisLoopReadsHere() async throws {
        let read = try await onLoopThread { () -> Int in
            let loop = RunLoop.current
            let made = LockedBox<LoopBound<Int>?>(nil)
            let ready = Latch()
            startThread {
                made.set(LoopBound(42, loop: loop))
                ready.open()
            }
            ready.wait()
            #expect(made.get()!.loop === loop)
            return made.get()!.value
        }
        #expect(read == 42)
    }

    @Test func readingOffTheLoopsThreadIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            let bound = LoopBound(7)
            let done = Latch()
            startThread {
                _ = bound.value
                done.open()
            }
            done.wait()
        }
    }
}
