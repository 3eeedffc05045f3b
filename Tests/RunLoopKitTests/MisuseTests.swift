import Glibc
import RunLoopKit
import Testing

/// Bad use gets a typed error, never a crash or a silent hang.
@Suite struct MisuseTests {
    @Test func runningTheCommonPseudoModeIsRefused() async throws {
        let error = try await onLoopThread {
            caught { () throws(RunLoopError) in try RunLoop.current.run(.common, timeout: .zero) }
        }
        #expect(error == .commonModesNotRunnable)
    }

    @Test func runningAnotherThreadsLoopIsRefused() async throws {
        let other = try await onLoopThread { RunLoop.current }
        let error = try await onLoopThread {
            caught { () throws(RunLoopError) in try other.run(.default, timeout: .zero) }
        }
        #expect(error == .notOwningThread)
    }

    @Test func theClockCanOnlyBeReplacedOnTheLoopThreadWhileIdleWithoutTimers() async throws {
        let other = try await onLoopThread { RunLoop.current }
        let fromOtherThread = try await onLoopThread {
            caught { () throws(RunLoopError) in try other.setClock(.manual(ManualClock())) }
        }
        #expect(fromOtherThread == .notOwningThread)

        let withTimer = try await onLoopThread { () -> RunLoopError? in
            let loop = RunLoop.current
            let timer = RunLoopTimer(after: .seconds(1)) { _ in }
            loop.add(timer, forMode: .default)
            defer { timer.invalidate() }
            return caught { () throws(RunLoopError) in try loop.setClock(.manual(ManualClock())) }
        }
        #expect(withTimer == .clockInUse)
    }

    @Test func aTimerBelongsToOneLoop() async throws {
        let timer = RunLoopTimer(after: .seconds(1)) { _ in }
        let first = try await onLoopThread { () -> Bool in
            RunLoop.current.add(timer, forMode: .default)
            return RunLoop.current.contains(timer, forMode: .default)
        }
        // The first thread has ended, its loop was torn down and the timer detached: it may move.
        #expect(first)
        let second = try await onLoopThread { () -> Bool in
            let loop = RunLoop.current
            loop.add(timer, forMode: .default)
            defer { timer.invalidate() }
            return loop.contains(timer, forMode: .default)
        }
        #expect(second)

        let shared = RunLoopTimer(after: .seconds(1)) { _ in }
        let (inFirst, inSecond) = try await onLoopThread { () -> (Bool, Bool) in
            let loop = RunLoop.current
            loop.add(shared, forMode: .default)
            let other = Latch()
            let result = LockedBox(false)
            startThread {
                RunLoop.current.add(shared, forMode: .default)
                result.set(RunLoop.current.contains(shared, forMode: .default))
                other.open()
            }
            other.wait()
            defer { shared.invalidate() }
            return (loop.contains(shared, forMode: .default), result.get())
        }
        #expect(inFirst)
        #expect(!inSecond)
    }

    @Test func invalidatedItemsCannotBeScheduled() async throws {
        let (timerAdded, sourceAdded, portError) = try await onLoopThread { () -> (Bool, Bool, RunLoopError?) in
            let loop = RunLoop.current
            let timer = RunLoopTimer(after: .seconds(1)) { _ in }
            timer.invalidate()
            loop.add(timer, forMode: .default)
            let source = RunLoopSource { _ in }
            source.invalidate()
            loop.add(source, forMode: .default)
            var fds: [Int32] = [0, 0]
            _ = pipe(&fds)
            defer { close(fds[0]); close(fds[1]) }
            let port = try RunLoopPortSource(fileDescriptor: fds[0]) { _, _ in }
            port.invalidate()
            let portError = caught { () throws(RunLoopError) in try loop.add(port, forMode: .default) }
            return (loop.contains(timer, forMode: .default), loop.contains(source, forMode: .default), portError)
        }
        #expect(!timerAdded)
        #expect(!sourceAdded)
        #expect(portError == .itemInvalidated)
    }
}

/// The typed error a call threw, or nil.
func caught<Result>(_ body: () throws(RunLoopError) -> Result) -> RunLoopError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// A value shared with a helper thread.
final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var value: Value
    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(&mutex, nil)
    }
    func set(_ newValue: Value) {
        pthread_mutex_lock(&mutex)
        value = newValue
        pthread_mutex_unlock(&mutex)
    }
    func update(_ change: (inout Value) -> Void) {
        pthread_mutex_lock(&mutex)
        change(&value)
        pthread_mutex_unlock(&mutex)
    }
    func get() -> Value {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return value
    }
}
