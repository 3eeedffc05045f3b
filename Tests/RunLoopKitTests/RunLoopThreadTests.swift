import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// The shipped way to give a loop a thread of its own: ``JoinableThread``, ``RunLoopThread``, ``Latch``.
@Suite struct RunLoopThreadTests {
    @Test("a joinable thread starts with no signal blocked, even from a thread that blocks them all")
    func startsUnblocked() {
        var all = sigset_t()
        var previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let blocked = LockedBox<[Int32]>([])
        let thread = JoinableThread {
            var mask = sigset_t()
            pthread_sigmask(SIG_SETMASK, nil, &mask)
            blocked.set([SIGUSR1, SIGTERM, SIGCHLD].filter { sigismember(&mask, $0) == 1 })
        }
        thread.join()
        #expect(blocked.get() == [])
    }

    @Test("join returns after the body and the thread's teardown, its loop's included")
    func joinWaitsForTheTeardown() {
        let loop = LockedBox<RunLoop?>(nil)
        let thread = JoinableThread {
            usleep(20_000)
            loop.set(RunLoop.current)
        }
        thread.join()
        #expect(loop.get()?.isTornDown == true)
    }

    @Test("a latch holds waiters until it opens, and stays open")
    func latch() {
        let latch = Latch()
        let passed = LockedBox(0)
        let waiters = (0..<2).map { _ in
            JoinableThread {
                latch.wait(); passed.update { $0 += 1 }
            }
        }
        usleep(20_000)
        #expect(passed.get() == 0, "nobody passes a closed latch")
        latch.open()
        for waiter in waiters { waiter.join() }
        #expect(passed.get() == 2)
        latch.wait()  // open for good: returns at once
    }

    @Test("the hosted loop runs on a thread of its own, idle without work of the owner's, until stop")
    func hostsALoop() {
        let host = RunLoopThread(name: "host")
        #expect(host.name == "host")
        #expect(!host.loop.isCurrentThread)
        usleep(20_000)  // idle: a loop with nothing to do would have returned from run() by now
        let seen = LockedBox<(current: Bool, mode: RunLoop.Mode?)?>(nil)
        let loop = host.loop
        host.performAndWait { seen.set((RunLoop.current === loop && loop.isCurrentThread, loop.currentMode)) }
        #expect(seen.get()?.current == true)
        #expect(seen.get()?.mode == .default, "inside the thread's run of the default mode")
        host.stop()
        #expect(loop.isTornDown)
        host.stop()  // idempotent
    }

    @Test("performAndWait returns after the block ran; on the loop's own thread it runs the block at once")
    func performAndWait() {
        let host = RunLoopThread(name: "host")
        defer { host.stop() }
        let steps = LockedBox<[String]>([])
        host.performAndWait(label: "outer") {
            usleep(20_000)
            host.performAndWait { steps.update { $0.append("inner") } }
            steps.update { $0.append("outer") }
        }
        steps.update { $0.append("caller") }
        #expect(steps.get() == ["inner", "outer", "caller"])
    }

    @Test("stop ends nested runs too")
    func stopEndsNestedRuns() {
        let host = RunLoopThread(name: "host")
        let loop = host.loop
        let nested = Latch()
        loop.perform(inModes: [.common]) {
            loop.add(RunLoopTimer(after: .seconds(3_600)) { _ in }, forMode: "Nested")
            nested.open()
            _ = try? loop.run("Nested", timeout: .seconds(3_600))
        }
        nested.wait()
        host.stop()
        #expect(loop.isTornDown)
    }

    @Test("stop ends a nested run that starts after stop was called (the race a block and stop can run)")
    func stopEndsANestedRunStartedAfterIt() {
        let host = RunLoopThread(name: "host")
        let loop = host.loop
        let aboutToNest = Latch()
        loop.perform(inModes: [.common]) {
            loop.add(RunLoopTimer(after: .seconds(3_600)) { _ in }, forMode: "Nested")
            aboutToNest.open()
            // Lets stop() land before the nested run begins.
            usleep(50_000)
            _ = try? loop.run("Nested", timeout: .seconds(3_600))
        }
        aboutToNest.wait()
        let stopped = Latch()
        // On a thread of its own, so a stop that never returns fails this test instead of hanging it.
        JoinableThread.detach {
            host.stop()
            stopped.open()
        }
        #expect(stopped.wait(timeout: .seconds(10)), "stop() did not return: the late nested run kept the thread")
        #expect(loop.isTornDown)
    }
}
