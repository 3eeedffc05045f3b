import RunLoopKit
import RunLoopTesting
import Testing

/// The loop as a Swift concurrency executor: jobs in enqueue order from any thread, actors pinned to a
/// loop, isolation checks, task executor preference, wake-ups, and the mode rule.
@Suite struct ExecutorTests {
    /// An actor whose jobs run on one loop's thread; it counts the calls that found itself elsewhere.
    actor LoopCounter {
        nonisolated let loop: RunLoop
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
        private(set) var value = 0
        private(set) var callsOffTheLoopThread = 0

        init(loop: RunLoop) { self.loop = loop }

        func increment() {
            if !loop.isCurrentThread { callsOffTheLoopThread += 1 }
            value += 1
        }
    }

    @Test("jobs enqueued from the loop's thread run in enqueue order, on that thread")
    func jobsRunInEnqueueOrder() async throws {
        let (log, offThread) = try await onManualClockLoop { loop, _ in
            let log = LockedBox<[Int]>([])
            let offThread = LockedBox(0)
            for index in 0..<100 {
                Task(executorPreference: loop) {
                    if !loop.isCurrentThread { offThread.update { $0 += 1 } }
                    log.update { $0.append(index) }
                }
            }
            try loop.runUntil(timeout: .seconds(10)) { log.get().count == 100 }
            return (log.get(), offThread.get())
        }
        #expect(log == Array(0..<100))
        #expect(offThread == 0)
    }

    @Test("jobs enqueued from many threads at once all run, each thread's in its order")
    func jobsFromManyThreadsAllRunInPerThreadOrder() async throws {
        let threads = 8
        let perThread = 200
        let (log, offThread) = try await onLoopThread { () -> ([(thread: Int, index: Int)], Int) in
            let loop = RunLoop.current
            let log = LockedBox<[(thread: Int, index: Int)]>([])
            let offThread = LockedBox(0)
            let go = Latch()
            for thread in 0..<threads {
                startThread {
                    go.wait()
                    for index in 0..<perThread {
                        Task(executorPreference: loop) {
                            if !loop.isCurrentThread { offThread.update { $0 += 1 } }
                            log.update { $0.append((thread, index)) }
                        }
                    }
                }
            }
            // The first job attaches the executor's source, which keeps the default mode running.
            Task(executorPreference: loop) { go.open() }
            try loop.runUntil(timeout: .seconds(30)) { log.get().count == threads * perThread }
            return (log.get(), offThread.get())
        }
        #expect(log.count == threads * perThread)
        for thread in 0..<threads {
            #expect(log.filter { $0.thread == thread }.map(\.index) == Array(0..<perThread), "thread \(thread)")
        }
        #expect(offThread == 0)
    }

    @Test("an actor pinned to a loop, called from many tasks, touches its state only on the loop's thread")
    func actorPinnedToALoopRunsOnItsThread() async {
        let host = RunLoopThread(name: "actor host")
        defer { host.stop() }
        let counter = LoopCounter(loop: host.loop)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<250 { await counter.increment() }
                }
            }
        }
        #expect(await counter.value == 1000)
        #expect(await counter.callsOffTheLoopThread == 0)
    }

    @Test("assumeIsolated works on the loop's thread outside any job, and the loop answers the isolation check")
    func assumeIsolatedOnTheLoopThread() async {
        let host = RunLoopThread(name: "isolation")
        defer { host.stop() }
        let counter = LoopCounter(loop: host.loop)
        await counter.increment()
        let seen = LockedBox<(value: Int, isolating: Bool?)?>(nil)
        // A plain block, not a job: the runtime must ask the loop whether this thread is its context.
        host.performAndWait {
            seen.set((Self.valueAssumingIsolation(of: counter), host.loop.isIsolatingCurrentContext()))
        }
        #expect(seen.get()?.value == 1)
        #expect(seen.get()?.isolating == true)
        #expect(host.loop.isIsolatingCurrentContext() == false)
    }

    @Test("assumeIsolated off the loop's thread traps")
    func assumeIsolatedOffTheLoopThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let host = RunLoopThread(name: "isolation")
            let counter = LoopCounter(loop: host.loop)
            _ = Self.valueAssumingIsolation(of: counter)
        }
    }

    /// Synchronous, as `assumeIsolated` must be called: the point is code that is not a job.
    static func valueAssumingIsolation(of counter: LoopCounter) -> Int {
        counter.assumeIsolated { $0.value }
    }

    @Test("Task(executorPreference:) and withTaskExecutorPreference run non-isolated code on the loop's thread")
    func executorPreferenceRunsOnTheLoop() async {
        let host = RunLoopThread(name: "preference")
        defer { host.stop() }
        let loop = host.loop
        let inTask = await Task(executorPreference: loop) { loop.isCurrentThread }.value
        let inScope = await withTaskExecutorPreference(loop) { await Self.isOnThread(of: loop) }
        let afterSuspension = await withTaskExecutorPreference(loop) { () async -> Bool in
            await Task.yield()
            return await Self.isOnThread(of: loop)
        }
        #expect(inTask)
        #expect(inScope)
        #expect(afterSuspension)
    }

    /// Non-isolated and async: runs on the task's preferred executor, if it has one.
    nonisolated static func isOnThread(of loop: RunLoop) async -> Bool {
        loop.isCurrentThread
    }

    @Test("a job enqueued from another thread wakes a loop asleep in a long timeout at once")
    func jobFromAnotherThreadWakesASleepingLoop() async throws {
        let (result, elapsed) = try await onLoopThread {
            let loop = RunLoop.current
            // Attach the executor's source (which keeps the default mode alive) and run that first job.
            Task(executorPreference: loop) {}
            try loop.run(.default, timeout: .zero)
            startThread {
                while !loop.isWaiting { sleep(milliseconds: 1) }
                Task(executorPreference: loop) { loop.stop() }
            }
            let start = loop.now
            let result = try loop.run(.default, timeout: .seconds(20))
            return (result, loop.now - start)
        }
        #expect(result == .stopped)
        #expect(elapsed < .seconds(5))
    }

    @Test("jobs wait while a nested run runs a private mode, and run once the common mode is back")
    func jobsWaitDuringANestedRunInAPrivateMode() async throws {
        let log = try await Self.logOfANestedRun(in: RunLoop.Mode("modal"), common: false)
        #expect(log == ["modal timer", "nested run returned", "job in \(RunLoop.Mode.default.rawValue)"])
    }

    @Test("a mode made common runs jobs in a nested run")
    func jobsRunInAModeMadeCommon() async throws {
        let log = try await Self.logOfANestedRun(in: RunLoop.Mode("panel"), common: true)
        #expect(log == ["job in panel", "panel timer", "nested run returned"])
    }

    /// A timer callout of the default mode enqueues a job, then runs `mode` (one timer in it) nested:
    /// the log says where the job ran, before or after the nested run returned.
    static func logOfANestedRun(in mode: RunLoop.Mode, common: Bool) async throws -> [String] {
        try await onManualClockLoop { loop, _ in
            let log = LockedBox<[String]>([])
            if common { loop.addCommonMode(mode) }
            loop.add(
                RunLoopTimer(after: .seconds(1)) { _ in
                    Task(executorPreference: loop) {
                        log.update { $0.append("job in \(loop.currentMode?.rawValue ?? "none")") }
                    }
                    loop.add(RunLoopTimer(after: .seconds(1)) { _ in log.update { $0.append("\(mode.rawValue) timer") } }, forMode: mode)
                    _ = try? loop.run(mode, timeout: .seconds(5))
                    log.update { $0.append("nested run returned") }
                }, forMode: .default)
            try loop.runUntil(timeout: .seconds(10)) { log.get().count == 3 }
            return log.get()
        }
    }

    @Test("a nested run started by a job runs no other job: jobs are not re-entered")
    func jobsDoNotRunReentrantly() async throws {
        let log = try await onManualClockLoop { loop, _ in
            let log = LockedBox<[String]>([])
            Task(executorPreference: loop) {
                log.update { $0.append("outer starts") }
                Task(executorPreference: loop) { log.update { $0.append("inner") } }
                _ = try? loop.run(.default, timeout: .seconds(1))
                log.update { $0.append("outer ends") }
            }
            try loop.runUntil(timeout: .seconds(10)) { log.get().contains("inner") }
            return log.get()
        }
        #expect(log == ["outer starts", "outer ends", "inner"])
    }
}
