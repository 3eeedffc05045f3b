import RunLoopTesting
import Testing

@testable import RunLoopKit

/// What a hop between the loop's actors (and, for a task preferring the loop, its non-isolated code)
/// costs: no new job, whether the task prefers the loop or nothing. The runtime re-enqueues a task
/// at a hop when its job ran with a task executor other than the task's preference; the loop tells
/// actors' jobs (its serial role) from jobs of tasks preferring it (the loop itself) to avoid that.
@Suite struct ExecutorHopTests {
    /// An actor pinned to a loop that waits for another thread to resume it, as `executor-bench` does.
    actor Waiter {
        nonisolated let loop: RunLoop
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
        private(set) var offTheLoopThread = 0

        init(loop: RunLoop) { self.loop = loop }

        /// Waits `count` times; each resume comes from `resumer`'s thread and hops back onto this actor.
        func wait(_ count: Int, on resumer: Resumer) async {
            for _ in 0..<count {
                await withUnsafeContinuation { resumer.hand($0) }
                if !loop.isCurrentThread { offTheLoopThread += 1 }
            }
        }

        func touch() -> Bool { loop.isCurrentThread }
    }

    /// A thread that resumes every continuation handed to it, one at a time, until `rounds` have been.
    final class Resumer: Sendable {
        private let handed = LockedBox<[UnsafeContinuation<Void, Never>]>([])

        init(rounds: Int, loop: RunLoop) {
            startThread { [handed] in
                var resumed = 0
                while resumed < rounds {
                    var taken: [UnsafeContinuation<Void, Never>] = []
                    handed.update { swap(&taken, &$0) }
                    for continuation in taken {
                        waitForTheAwaitUnderThreadSanitizer(on: loop)
                        continuation.resume()
                    }
                    resumed += taken.count
                    if taken.isEmpty { sleep(milliseconds: 0) }
                }
            }
        }

        func hand(_ continuation: UnsafeContinuation<Void, Never>) {
            handed.update { $0.append(continuation) }
        }
    }

    /// The loop's job counters, read on its thread: jobs queued, source callouts that ran jobs, and
    /// jobs run again at once after the runtime handed them back.
    static func counters(of host: RunLoopThread) -> (queued: Int, drains: Int, reruns: Int) {
        let counters = LockedBox((queued: 0, drains: 0, reruns: 0))
        host.performAndWait {
            let jobs = host.loop.jobs
            counters.set((jobs.queued, jobs.drainCount, jobs.rerunCount))
        }
        return counters.get()
    }

    @Test("a task without a preference, on an actor of the loop, resumed from another thread: one job per resume")
    func taskWithoutPreferenceHopsInline() async {
        let host = RunLoopThread(name: "no preference")
        defer { host.stop() }
        let waiter = Waiter(loop: host.loop)
        _ = await waiter.touch()
        // Loop passes, counted with the public observer: with every job run with the loop as task
        // executor, each resume took two passes with a job (the resume, and the re-enqueue at the
        // hop after it) and an empty one before sleeping — 601 jobs and 903 passes for 300 resumes.
        let passes = LockedBox(0)
        let observer = RunLoopObserver(activities: .beforeSources, repeats: true) { _, _ in passes.update { $0 += 1 } }
        host.performAndWait { host.loop.add(observer, forMode: .common) }
        let rounds = 300
        let before = Self.counters(of: host)
        await Task.detached { await waiter.wait(rounds, on: Resumer(rounds: rounds, loop: host.loop)) }.value
        let after = Self.counters(of: host)
        host.performAndWait { observer.invalidate() }

        #expect(await waiter.offTheLoopThread == 0)
        // The call, each resume and the return: no job for a hop between them.
        #expect(after.queued - before.queued <= rounds + 4)
        #expect(after.reruns == before.reruns)
        #expect(passes.get() <= 5 * rounds / 2)
    }

    @Test("a task preferring the loop, on an actor of the loop, resumed from another thread: one job per resume, on the loop")
    func taskPreferringTheLoopHopsInline() async {
        let host = RunLoopThread(name: "preference")
        defer { host.stop() }
        let loop = host.loop
        let waiter = Waiter(loop: loop)
        _ = await waiter.touch()
        let rounds = 300
        let before = Self.counters(of: host)
        let (onLoop, preference) = await Task(executorPreference: loop) { () async -> (Bool, Bool) in
            await waiter.wait(rounds, on: Resumer(rounds: rounds, loop: loop))
            let preference = withUnsafeCurrentTask { $0?.unownedTaskExecutor == loop.asUnownedTaskExecutor() }
            return (loop.isCurrentThread, preference)
        }.value
        let after = Self.counters(of: host)

        #expect(onLoop)
        #expect(preference)
        #expect(await waiter.offTheLoopThread == 0)
        #expect(after.queued - before.queued <= rounds + 4)
        // The resumes arrive as the actor's jobs: the runtime hands each back once at its first hop,
        // and it runs again at once with the loop as task executor — no queued job, no loop pass.
        #expect(after.drains - before.drains <= rounds + 4)
    }

    @Test("a task preferring the loop stays on its thread across awaits: actors, continuations, yields, a preference scope")
    func taskPreferringTheLoopStaysOnItsThread() async {
        let host = RunLoopThread(name: "stays")
        defer { host.stop() }
        let loop = host.loop
        let waiter = Waiter(loop: loop)
        let rounds = 50
        let offThread = await Task(executorPreference: loop) { () async -> Int in
            var offThread = 0
            let resumer = Resumer(rounds: rounds, loop: loop)
            for _ in 0..<rounds {
                if await !waiter.touch() { offThread += 1 }
                if !loop.isCurrentThread { offThread += 1 }
                await withUnsafeContinuation { resumer.hand($0) }
                if !loop.isCurrentThread { offThread += 1 }
                await Task.yield()
                if await !Self.isOnThread(of: loop) { offThread += 1 }
            }
            return offThread
        }.value
        #expect(offThread == 0)

        // A task without a preference, inside and after a preference scope, then on the loop's actor.
        let (inScope, actorAfterScope) = await Task.detached { () async -> (Bool, Bool) in
            let inScope = await withTaskExecutorPreference(loop) { () async -> Bool in
                let onActor = await waiter.touch()
                await Task.yield()
                return onActor && loop.isCurrentThread
            }
            return (inScope, await waiter.touch())
        }.value
        #expect(inScope)
        #expect(actorAfterScope)
    }

    /// Non-isolated and async: runs on the task's preferred executor, if it has one.
    nonisolated static func isOnThread(of loop: RunLoop) async -> Bool {
        loop.isCurrentThread
    }

    static func identity(of executor: UnownedSerialExecutor) -> ObjectIdentifier? {
        executor.asSerialExecutor().map { ObjectIdentifier($0) }
    }

    @Test("every actor of a loop names one serial executor, not the loop's task executor")
    func actorsOfALoopShareOneSerialExecutor() {
        let host = RunLoopThread(name: "identity")
        defer { host.stop() }
        let first = Waiter(loop: host.loop)
        let second = Waiter(loop: host.loop)
        let serial = Self.identity(of: first.unownedExecutor)
        #expect(serial != nil)
        #expect(serial == Self.identity(of: second.unownedExecutor))
        #expect(serial != ObjectIdentifier(host.loop))
        #expect(host.loop.asUnownedTaskExecutor() == UnownedTaskExecutor(ordinary: host.loop))
    }
}
