// rlk-profile: runs one RunLoopKit workload once, outside the benchmark harness, for profilers:
//   valgrind --tool=callgrind .build/release/rlk-profile chain 20000
//   strace -c -f .build/release/rlk-profile tick 10000
//   perf record -g .build/release/rlk-profile source0 1000000
// Workloads: batch, chain, tick, spread, source0, observer (source0 with one all-activities observer),
// pingpong, pending (N pending, then [ops] insert+cancel, 10,000 by default), xperform / xsignal / xenqueue (N cross-thread
// round trips: a block, a signalled source, a task started on the loop as its task executor — so xenqueue counts the task's
// creation too; exits 1 and says so if one is lost for 2 s), echo (N 64-byte messages echoed over loopback TCP by
// RunLoopNet, 100 client connections and the server on this loop, as tcp.echo), memtimer / memsource / memport / memconn (heap bytes
// held per pending timer, custom source, port source, and a port source as a TCP connection holds its own — a cancel callout,
// added to the common modes: glibc's count of bytes in use, so chunk sizes, not requests, and RunLoopKit's pool for libevent).
import BenchSupport
import Glibc
import RunLoopKit
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    print(
        "usage: rlk-profile batch|chain|tick|spread|source0|observer|pingpong|pending|xperform|xsignal|xenqueue|echo|memtimer|memsource|memport|memconn [count]"
    )
    exit(2)
}
let workload = arguments[1]
let count = arguments.count > 2 ? Int(arguments[2])! : 100_000
let loop = RunLoop.current
let mode = RunLoop.Mode("profile")

final class Box: @unchecked Sendable {
    var value = 0
    var callback: ((RunLoopTimer) -> Void)?
}
let box = Box()
let start = bs_now_ns()

switch workload {
case "batch":
    let callback: (RunLoopTimer) -> Void = { _ in box.value += 1 }
    for _ in 0..<count { loop.add(RunLoopTimer(after: .zero, callback), forMode: mode) }
    _ = try loop.run(mode)
case "chain":
    box.callback = { _ in
        box.value += 1
        if box.value < count { loop.add(RunLoopTimer(after: .zero, box.callback!), forMode: mode) }
    }
    loop.add(RunLoopTimer(after: .zero, box.callback!), forMode: mode)
    _ = try loop.run(mode)
case "tick":
    loop.add(
        RunLoopTimer(after: .zero, repeating: .nanoseconds(1)) { timer in
            box.value += 1
            if box.value >= count { timer.invalidate() }
        }, forMode: mode)
    _ = try loop.run(mode)
case "spread":
    let callback: (RunLoopTimer) -> Void = { _ in box.value += 1 }
    for index in 0..<count {
        let due = start + UInt64(index) * 100_000_000 / UInt64(count)
        loop.add(RunLoopTimer(fireAt: LoopInstant(nanoseconds: due), callback), forMode: mode)
    }
    _ = try loop.run(mode)
case "source0", "observer":
    if workload == "observer" {
        loop.add(RunLoopObserver(activities: .allActivities) { _, _ in box.value &+= 0 }, forMode: mode)
    }
    let source = RunLoopSource { source in
        box.value += 1
        if box.value < count { source.signal() } else { loop.stop() }
    }
    loop.add(source, forMode: mode)
    source.signal()
    _ = try loop.run(mode)
case "pingpong":
    var fds: [Int32] = [-1, -1]
    precondition(bs_socketpair(&fds) == 0)
    let fdA = fds[0], fdB = fds[1]
    let a = try RunLoopPortSource(fileDescriptor: fdA) { _, _ in
        _ = bs_read1(fdA)
        box.value += 1
        if box.value < count { _ = bs_write1(fdA) } else { loop.stop() }
    }
    let b = try RunLoopPortSource(fileDescriptor: fdB) { _, _ in
        _ = bs_read1(fdB)
        _ = bs_write1(fdB)
    }
    try loop.add(a, forMode: mode)
    try loop.add(b, forMode: mode)
    _ = bs_write1(fdA)
    _ = try loop.run(mode)
case "pending":
    let now = loop.now.nanoseconds
    let hour: UInt64 = 3_600_000_000_000
    for index in 0..<count {
        loop.add(RunLoopTimer(fireAt: LoopInstant(nanoseconds: now + hour + UInt64(index) * hour / UInt64(count))) { _ in }, forMode: mode)
    }
    let probe = RunLoopTimer(fireAt: LoopInstant(nanoseconds: now + hour + hour / 2)) { _ in }
    let operations = arguments.count > 3 ? Int(arguments[3])! : 10_000
    let filled = bs_now_ns()
    for _ in 0..<operations {
        loop.add(probe, forMode: mode)
        loop.remove(probe, forMode: mode)
    }
    box.value = operations
    print("fill: \(Double(filled - start) / Double(count)) ns per timer")
    let elapsed = bs_now_ns() - filled
    print("pending: \(Double(elapsed) / Double(operations)) ns per insert+cancel")
    exit(0)
case "xperform", "xsignal", "xenqueue":
    let remote = Remote()
    _ = bs_thread_start(remoteLoopMain, Unmanaged.passRetained(remote).toOpaque())
    bs_sem_wait(remote.ready)
    let post: @Sendable () -> Void = { [remote] in bs_sem_post(remote.done) }
    if workload == "xenqueue" { checkTaskRunsOnLoop(remote) }
    for index in 0..<count {
        if workload == "xperform" {
            remote.loop.perform(post)
        } else if workload == "xenqueue" {
            startTask(on: remote)
        } else {
            remote.source.signal()
            remote.loop.wakeUp()
        }
        if bs_sem_wait_ms(remote.done, 2_000) != 0 {
            print(
                "\(workload): round trip \(index) lost: the loop slept 2 s with work pending (isWaiting: \(remote.loop.isWaiting)); pid \(getpid()), inspect /proc/\(getpid())/fdinfo within 20 s"
            )
            fflush(nil)
            sleep(20)
            exit(1)
        }
        box.value += 1
    }
case "echo":
    box.value = try EchoProbe().run(messages: count)
case "memtimer", "memsource", "memport", "memconn":
    let bytes = MemoryProbe.bytesPerItem(workload, count: count, loop: loop, mode: mode)
    print("\(workload): \(bytes) bytes per item (\(count) items)")
    exit(0)
default:
    print("unknown workload \(workload)")
    exit(2)
}
let elapsed = bs_now_ns() - start
print("\(workload): \(box.value) operations, \(Double(elapsed) / Double(max(box.value, 1))) ns per operation")

/// A loop on another thread, for the cross-thread workloads.
final class Remote: @unchecked Sendable {
    let ready = bs_sem_new()!, done = bs_sem_new()!
    var loop: RunLoop!
    var source: RunLoopSource!
}

/// Starts a task whose first job the runtime enqueues on the remote loop from this thread. A plain
/// function so the task's closure is not main-actor isolated (an isolated closure would run on the
/// main actor, whatever the executor preference).
func startTask(on remote: Remote) {
    Task(executorPreference: remote.loop) { bs_sem_post(remote.done) }
}

/// Outside the counted round trips: a task started with the loop as its preference runs on the loop's
/// thread, so xenqueue measures the executor's cross-thread enqueue and not some other executor.
func checkTaskRunsOnLoop(_ remote: Remote) {
    let onLoop = OnLoopFlag()
    Task(executorPreference: remote.loop) {
        onLoop.value.store(remote.loop.isCurrentThread, ordering: .releasing)
        bs_sem_post(remote.done)
    }
    guard bs_sem_wait_ms(remote.done, 2_000) == 0, onLoop.value.load(ordering: .acquiring) else {
        print("xenqueue: the task did not run on the remote loop's thread")
        exit(1)
    }
}

/// Whether the checking task ran on the loop's thread, read back on this one.
final class OnLoopFlag: Sendable {
    let value = Atomic<Bool>(false)
}

/// The remote loop's thread (a plain C-callable function: top-level closures here are main-actor bound).
func remoteLoopMain(_ context: UnsafeMutableRawPointer?) {
    let remote = Unmanaged<Remote>.fromOpaque(context!).takeUnretainedValue()
    remote.loop = RunLoop.current
    remote.source = RunLoopSource { [remote] _ in bs_sem_post(remote.done) }
    remote.loop.add(remote.source, forMode: .default)
    bs_sem_post(remote.ready)
    try? remote.loop.run()
}
