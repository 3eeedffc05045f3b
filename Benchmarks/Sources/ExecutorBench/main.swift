// executor-bench: a Swift concurrency job enqueued on an executor and run there — from the executor's
// own thread and from another thread — on RunLoopKit's loop, a SwiftNIO event loop and a DispatchQueue,
// in one process, one after the other. Not a harness benchmark: package-benchmark has no way to run
// a workload inside an actor on a given executor, so this prints its own table (see README.md).
import BenchSupport
import Dispatch
import Glibc
import NIOCore
import NIOPosix
import RunLoopKit
import Synchronization

/// An executor under test: what an actor pinned to it returns as its `unownedExecutor`, and how to
/// stop the thread behind it.
struct System {
    let name: String
    let executor: UnownedSerialExecutor
    let stop: () -> Void
}

/// A DispatchQueue as a serial executor: each job is one `async` block. Dispatch on Linux does not
/// make its queues executors itself; this is what an application would write.
final class DispatchQueueExecutor: SerialExecutor {
    let queue = DispatchQueue(label: "executor-bench")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }
}

/// Continuations handed from the pinned actor's thread to the benchmark thread.
final class HandOff: Sendable {
    private let slot = Mutex<UnsafeContinuation<Void, Never>?>(nil)
    // A POSIX semaphore: safe from any thread.
    nonisolated(unsafe) private let ready = bs_sem_new()!

    deinit { bs_sem_free(ready) }

    func put(_ continuation: UnsafeContinuation<Void, Never>) {
        slot.withLock { $0 = continuation }
        bs_sem_post(ready)
    }

    func take() -> UnsafeContinuation<Void, Never> {
        bs_sem_wait(ready)
        return slot.withLock { $0.take()! }
    }
}

/// An actor whose jobs run on the system's executor.
actor Pinned {
    let executor: UnownedSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor }

    init(_ executor: UnownedSerialExecutor) { self.executor = executor }

    /// `count` jobs enqueued from the executor's own thread: each yield puts the task back on it.
    func yieldChain(_ count: Int) async {
        for _ in 0..<count { await Task.yield() }
    }

    /// Binds the executor's thread to `cpu` (a job runs on that thread, so the binding is done there).
    func pinThread(to cpu: Int32) { precondition(bs_pin_current_thread(cpu) == 0, "sched_setaffinity") }

    /// `count` jobs enqueued from the benchmark thread: each wait is resumed from there.
    func resumedFromOutside(_ count: Int, _ handOff: HandOff) async {
        for _ in 0..<count { await withUnsafeContinuation { handOff.put($0) } }
    }
}

/// Nanoseconds per operation of each repetition, after one warm-up.
func measure(repetitions: Int, operations: Int, _ body: () -> Void) -> [Double] {
    body()
    return (0..<repetitions).map { _ in
        let start = bs_now_ns()
        body()
        return Double(bs_now_ns() - start) / Double(operations)
    }
}

/// Runs `work` as a task on `actor`'s executor and waits for it on this (non-executor) thread.
func runAndWait(_ actor: Pinned, _ work: @escaping @Sendable (Pinned) async -> Void) {
    let finished = bs_sem_new()!
    defer { bs_sem_free(finished) }
    nonisolated(unsafe) let semaphore = finished
    Task.detached {
        await work(actor)
        bs_sem_post(semaphore)
    }
    bs_sem_wait(finished)
}

func makeSystems() -> [System] {
    let host = RunLoopThread(name: "executor-bench")
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let queue = DispatchQueueExecutor()
    return [
        System(name: "RunLoopKit", executor: host.loop.asUnownedSerialExecutor(), stop: { host.stop() }),
        System(name: "SwiftNIO", executor: group.next().executor.asUnownedSerialExecutor(), stop: { try? group.syncShutdownGracefully() }),
        System(name: "DispatchQueue", executor: queue.asUnownedSerialExecutor(), stop: { _ = queue })
    ]
}

func describe(_ samples: [Double]) -> String {
    let sorted = samples.sorted()
    let median = sorted[sorted.count / 2]
    // Tenths of a nanosecond; no Foundation here for String(format:).
    func tenths(_ value: Double) -> String { "\((value * 10).rounded() / 10)" }
    return "\(tenths(median)) ns (min \(tenths(sorted.first!)), max \(tenths(sorted.last!)))"
}

let arguments = Array(CommandLine.arguments.dropFirst())
let repetitions = Int(arguments.first ?? "") ?? 11
// One column alone (a second argument naming a system, or "all"), for strace, perf sched and taskset runs.
let only = arguments.count > 1 && arguments[1] != "all" ? arguments[1] : nil
// A third argument: seconds each executor then sits idle (its thread asleep), with the process's CPU time
// over them — an idle executor must cost ~0 % CPU.
let idleSeconds = arguments.count > 2 ? Int(arguments[2]) ?? 0 : 0

/// CPU time (user + system) of the whole process so far, in microseconds.
func processCPUMicroseconds() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000 + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec
}
// EXECUTOR_BENCH_PIN="E,B": every executor's thread on CPU E, the benchmark thread on CPU B. Unpinned, the
// scheduler decides run by run whether a woken thread lands on its waker's core or an idle vCPU must be
// woken (on this project's VM the two cost ~10–17 against ~35–45 µs, and every executor flips between
// them); pinned apart, every round trip crosses cores for every executor alike. A DispatchQueue has no
// thread of its own: the pool thread that runs the pinning job is bound, later jobs may run on others.
let pinning: (executor: Int32, bench: Int32)? = {
    guard let text = getenv("EXECUTOR_BENCH_PIN").map({ String(cString: $0) }) else { return nil }
    let cpus = text.split(separator: ",").compactMap { Int32($0) }
    precondition(cpus.count == 2, "EXECUTOR_BENCH_PIN=executor-cpu,bench-cpu")
    return (cpus[0], cpus[1])
}()
let chain = 100_000
let roundTrips = 20_000

print("executor-bench: median of \(repetitions) repetitions (after one warm-up), nanoseconds per job")
print("same thread: a task on the executor yields \(chain) times (each yield enqueues it again from the executor's thread)")
print("other thread: the benchmark thread resumes the pinned task \(roundTrips) times (enqueue from another thread, run, hand back)")
let systems = makeSystems()
if let pinning {
    precondition(bs_pin_current_thread(pinning.bench) == 0, "sched_setaffinity")
    print("pinned: each executor's thread on CPU \(pinning.executor), the benchmark thread on CPU \(pinning.bench)")
}
print()
for system in systems {
    if let only, only != system.name {
        system.stop()
        continue
    }
    let actor = Pinned(system.executor)
    if let pinning { runAndWait(actor) { await $0.pinThread(to: pinning.executor) } }
    let sameThread = measure(repetitions: repetitions, operations: chain) {
        runAndWait(actor) { await $0.yieldChain(chain) }
    }
    let otherThread = measure(repetitions: repetitions, operations: roundTrips) {
        let handOff = HandOff()
        // Waiting for the task's end, not only its last resume, keeps its final job from landing on an
        // executor the loop below has already stopped.
        let finished = bs_sem_new()!
        defer { bs_sem_free(finished) }
        nonisolated(unsafe) let semaphore = finished
        Task.detached {
            await actor.resumedFromOutside(roundTrips, handOff)
            bs_sem_post(semaphore)
        }
        for _ in 0..<roundTrips { handOff.take().resume() }
        bs_sem_wait(finished)
    }
    print("\(system.name): same thread \(describe(sameThread)); other thread \(describe(otherThread))")
    if idleSeconds > 0 {
        let before = processCPUMicroseconds()
        sleep(UInt32(idleSeconds))
        let used = processCPUMicroseconds() - before
        print("\(system.name) idle: \(used) µs of CPU in \(idleSeconds) s (\(Double(used) / Double(idleSeconds * 10_000)) %)")
    }
    system.stop()
}
