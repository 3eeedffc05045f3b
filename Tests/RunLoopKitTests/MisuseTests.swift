import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// Bad use gets a typed error, never a crash or a silent hang.
@Suite struct MisuseTests {
    @Test func runningTheCommonPseudoModeIsRefused() async throws {
        let error = try await onLoopThread {
            caught { () throws(RunLoopError) in try RunLoop.current.run(.common, timeout: .zero) }
        }
        #expect(error == .commonModesNotRunnable)
    }

    /// The loop of a thread that stays alive until `release` opens.
    private func liveLoopOnAnotherThread() -> (RunLoop, Latch) {
        let loopBox = LockedBox<RunLoop?>(nil)
        let ready = Latch()
        let release = Latch()
        startThread {
            loopBox.set(RunLoop.current)
            ready.open()
            release.wait()
        }
        ready.wait()
        return (loopBox.get()!, release)
    }

    /// `run("default")` compiles (modes are string literals) but names a mode nobody uses; CFRunLoop
    /// would run it as an empty mode and return at once. RunLoopKit says what is wrong instead.
    @Test func runningAModeThatWasNeverUsedIsRefusedWithAHint() async throws {
        let (error, afterUse) = try await onLoopThread {
            let loop = RunLoop.current
            let error = caught { () throws(RunLoopError) in try loop.run("default", timeout: .zero) }
            // Once something was added to it the name is a mode like any other (here, empty again).
            let source = RunLoopSource { _ in }
            loop.add(source, forMode: "default")
            source.invalidate()
            let afterUse = try loop.run("default", timeout: .zero)
            return (error, afterUse)
        }
        #expect(error == .unknownMode("default"))
        #expect(error?.description.contains("RunLoop.Mode.default") == true)
        #expect(afterUse == .finished)
    }

    @Test func performFromLoopThreadOffTheLoopThreadIsRefusedAndQueuesNothing() async throws {
        let (other, release) = liveLoopOnAnotherThread()
        defer { release.open() }
        let error = try await onLoopThread {
            caught { () throws(RunLoopError) in try other.performFromLoopThread(inModes: ["Q"]) {} }
        }
        #expect(error == .notOwningThread)
        // Queueing a block creates its mode: none was created, so nothing was queued.
        #expect(!other.allModes.contains("Q"))
    }

    @Test func runningAnotherThreadsLoopIsRefused() async throws {
        let (other, release) = liveLoopOnAnotherThread()
        defer { release.open() }
        let error = try await onLoopThread {
            caught { () throws(RunLoopError) in try other.run(.default, timeout: .zero) }
        }
        #expect(error == .notOwningThread)
    }

    @Test func aDeadThreadsLoopRefusesEveryThreadEvenOneReusingItsHandle() async throws {
        // glibc reuses pthread handles, so a new thread may carry the dead owner's handle.
        let dead = try await onLoopThread { RunLoop.current }
        for _ in 0..<3 {
            let (error, owned) = try await onLoopThread {
                (caught { () throws(RunLoopError) in try dead.run(.default, timeout: .zero) }, dead.isCurrentThread)
            }
            #expect(error == .loopTornDown)
            #expect(!owned)
        }
        #expect(dead.isTornDown)
    }

    @Test func theClockCanOnlyBeReplacedOnTheLoopThreadWhileIdleWithoutTimers() async throws {
        let (other, release) = liveLoopOnAnotherThread()
        defer { release.open() }
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
