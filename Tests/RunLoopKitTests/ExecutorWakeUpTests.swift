import RunLoopTesting
import Testing

@testable import RunLoopKit

/// Which executor enqueues wake the loop: a job enqueued by a job of the loop writes no wake-up (the
/// loop is in its sources pass and polls before it could sleep), every other enqueue still does.
@Suite struct ExecutorWakeUpTests {
    @Test("a job enqueued by a job of the loop writes no wake-up, and runs in the next pass")
    func jobFromAJobWritesNoWakeUp() async throws {
        let (pendingAfterEnqueue, log) = try await onManualClockLoop { loop, _ in
            let pendingAfterEnqueue = LockedBox<Bool?>(nil)
            let log = LockedBox<[String]>([])
            Task(executorPreference: loop) {
                // The wake-up of this task's own start is drained by the poll after this pass.
                await Task.yield()
                log.update { $0.append("outer") }
                Task(executorPreference: loop) { log.update { $0.append("inner") } }
                pendingAfterEnqueue.set(loop.wakePort.isPending)
            }
            try loop.runUntil(timeout: .seconds(10)) { log.get().count == 2 }
            return (pendingAfterEnqueue.get(), log.get())
        }
        #expect(pendingAfterEnqueue == false)
        #expect(log == ["outer", "inner"])
    }

    @Test("a job enqueued on the loop's thread outside a job (a beforeWaiting observer) still wakes the loop")
    func jobFromAnObserverWakesTheLoop() async throws {
        let (result, elapsed, pendingAfterEnqueue) = try await onLoopThread {
            let loop = RunLoop.current
            let pendingAfterEnqueue = LockedBox<Bool?>(nil)
            // Something to keep the default mode alive until the job exists.
            let keepAlive = RunLoopTimer(after: .seconds(3600)) { _ in }
            loop.add(keepAlive, forMode: .default)
            let observer = RunLoopObserver(activities: .beforeWaiting, repeats: false, label: "enqueue") { _, _ in
                Task(executorPreference: loop) { loop.stop() }
                pendingAfterEnqueue.set(loop.wakePort.isPending)
            }
            loop.add(observer, forMode: .default)
            let start = loop.now
            // The loop sleeps right after the observer: only the job's wake-up ends this wait early.
            let result = try loop.run(.default, timeout: .seconds(20))
            keepAlive.invalidate()
            return (result, loop.now - start, pendingAfterEnqueue.get())
        }
        #expect(result == .stopped)
        #expect(elapsed < .seconds(5))
        #expect(pendingAfterEnqueue == true)
    }

    @Test("a task yielding on an otherwise idle loop runs through: its jobs need no wake-up")
    func yieldingTaskRunsThroughOnAnIdleLoop() async throws {
        let (result, elapsed, yields) = try await onLoopThread {
            let loop = RunLoop.current
            let yields = LockedBox(0)
            Task(executorPreference: loop) {
                for _ in 0..<1_000 {
                    await Task.yield()
                    yields.update { $0 += 1 }
                }
                loop.stop()
            }
            let start = loop.now
            let result = try loop.run(.default, timeout: .seconds(20))
            return (result, loop.now - start, yields.get())
        }
        #expect(result == .stopped)
        #expect(yields == 1_000)
        #expect(elapsed < .seconds(5))
    }

    /// An actor pinned to a loop, as `executor-bench` and the async IM client use it.
    actor Resumable {
        nonisolated let loop: RunLoop
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
        private(set) var offTheLoopThread = 0

        init(loop: RunLoop) { self.loop = loop }

        /// Waits `count` times for another thread to resume it; each wait hops back onto this actor.
        func wait(_ count: Int, handing: LockedBox<[UnsafeContinuation<Void, Never>]>) async {
            for _ in 0..<count {
                await withUnsafeContinuation { continuation in handing.update { $0.append(continuation) } }
                if !loop.isCurrentThread { offTheLoopThread += 1 }
            }
        }
    }

    @Test("a task without a preference, on an actor of the loop, resumed from another thread: every resume runs")
    func actorResumedFromAnotherThread() async throws {
        let host = RunLoopThread(name: "resumed")
        defer { host.stop() }
        let actor = Resumable(loop: host.loop)
        let handing = LockedBox<[UnsafeContinuation<Void, Never>]>([])
        let rounds = 500
        startThread {
            var resumed = 0
            while resumed < rounds {
                var taken: [UnsafeContinuation<Void, Never>] = []
                handing.update { swap(&taken, &$0) }
                for continuation in taken {
                    waitForTheAwaitUnderThreadSanitizer(on: host.loop)
                    continuation.resume()
                }
                resumed += taken.count
                if taken.isEmpty { sleep(milliseconds: 0) }
            }
        }
        await actor.wait(rounds, handing: handing)
        #expect(await actor.offTheLoopThread == 0)
    }
}
