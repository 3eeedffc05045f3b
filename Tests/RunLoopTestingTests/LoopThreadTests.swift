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

/// A spawned child keeps nothing of ours beyond what it was given.
@Suite struct SpawnedChildDescriptorTests {
    /// Spawns `sh -c "test -e /proc/$$/fd/N"` and returns its exit status: 0 if the child has `fd` open.
    private func childHas(_ fd: Int32, closingInherited: Bool) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if closingInherited { #expect(closeInheritedDescriptors(from: 3, in: &actions)) }
        let arguments = ["/bin/sh", "-c", "test -e /proc/$$/fd/\(fd)"]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (status >> 8) & 0xff
    }

    @Test func aDescriptorWithoutCloseOnExecStaysOutOfTheChild() {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        #expect(childHas(ends[1], closingInherited: false) == 0, "the witness: without it the child inherits the pipe")
        #expect(childHas(ends[1], closingInherited: true) == 1)
    }
}

/// `onLoopThreads` runs its bodies at the same time, each on a loop of its own, results in order.
@Suite struct LoopThreadsTests {
    @Test func theBodiesRunAtTheSameTimeAndTheirResultsComeInOrder() async throws {
        let arrived = LockedBox(0)
        // Each body waits (up to 10 s) for the other to have started: bodies run one after the other
        // would each wait in vain, and both would report false.
        // The loop is taken before the meeting, so both exist at once and cannot share an address.
        @Sendable func meet(_ name: String) -> (String, Bool, ObjectIdentifier) {
            let loop = ObjectIdentifier(RunLoop.current)
            arrived.update { $0 += 1 }
            for _ in 0..<10_000 where arrived.get() < 2 { sleep(milliseconds: 1) }
            return (name, arrived.get() == 2, loop)
        }
        let first: @Sendable () -> (String, Bool, ObjectIdentifier) = { meet("first") }
        let second: @Sendable () -> (String, Bool, ObjectIdentifier) = { meet("second") }
        let results = try await onLoopThreads([first, second])
        #expect(results.map(\.0) == ["first", "second"])
        #expect(results.map(\.1) == [true, true], "both bodies were running at once")
        #expect(results[0].2 != results[1].2, "each on a loop of its own")
    }

    @Test func anErrorFromEitherBodyReachesTheTest() async throws {
        struct Refused: Error {}
        let fine: @Sendable () throws -> Int = { 1 }
        let failing: @Sendable () throws -> Int = { throw Refused() }
        await #expect(throws: Refused.self) { try await onLoopThreads([fine, failing]) }
    }
}
