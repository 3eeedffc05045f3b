import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// `onLoopThread` hands its result back only after the thread — and its loop's teardown — has ended.
@Suite struct LoopThreadTests {
    /// Set by a thread-specific-data destructor that takes its time, as a loop's teardown may under
    /// load: if `onLoopThread` returned as soon as the body did, the flag would still be clear.
    private static let slowDestructorRan = LockedBox(false)
    private static let slowKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { _ in
            usleep(20_000)
            LoopThreadTests.slowDestructorRan.set(true)
        }
        return key
    }()

    @Test func theResultArrivesAfterTheThreadsDestructorsHaveRun() async throws {
        let key = Self.slowKey
        let loop = try await onLoopThread { () -> RunLoop in
            pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
            return RunLoop.current
        }
        #expect(Self.slowDestructorRan.get())
        #expect(loop.isTornDown)
    }

    @Test func anErrorThrownByTheBodyReachesTheTest() async throws {
        struct Failure: Error, Equatable {}
        await #expect(throws: Failure.self) { try await onLoopThread { throw Failure() } }
    }
}
