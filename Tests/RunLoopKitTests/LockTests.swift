import RunLoopTesting
import Testing

@testable import RunLoopKit

/// The loop's lock, a futex word: mutual exclusion under contention (four threads on two cores spend
/// most of their time waiting for each other, so the sleeping path and its wake-ups are taken
/// thousands of times), and a body that throws gives the lock back.
@Suite struct LockTests {
    @Test func excludesEveryOtherThreadUnderContention() async throws {
        let lock = Lock()
        let counter = UnguardedCounter()
        let threads = 4
        let rounds = 50_000
        let bodies: [@Sendable () -> Void] = (0..<threads).map { _ in
            {
                // A read, then a write: without exclusion, updates are lost.
                for _ in 0..<rounds {
                    lock.withLock {
                        let value = counter.value
                        counter.value = value &+ 1
                    }
                }
            }
        }
        _ = try await onLoopThreads(bodies)
        #expect(lock.withLock { counter.value } == threads * rounds)
    }

    @Test func aThrowingBodyReleasesTheLock() {
        struct Failure: Error {}
        let lock = Lock()
        #expect(throws: Failure.self) { try lock.withLock { () throws(Failure) in throw Failure() } }
        #expect(lock.withLock { true })
    }
}

/// Guarded only by the lock under test.
private final class UnguardedCounter: @unchecked Sendable {
    var value = 0
}
