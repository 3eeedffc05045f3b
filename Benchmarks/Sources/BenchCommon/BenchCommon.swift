@_exported import BenchSupport
import Benchmark

/// The workloads, with the number of operations one benchmark iteration performs.
///
/// A benchmark is named `<workload>#<operations per iteration>`; `Scripts/table.py` divides each
/// iteration's measurement by that count, so every system can pick an iteration size that suits it while
/// the table compares the same unit: one operation. Every system's target uses these names.
public enum Workload {
    // 1. Timers
    public static let timerBatch = "timer.oneshot.batch"  // schedule N zero-delay one-shots, run until all fired
    public static let timerChain = "timer.oneshot.chain"  // each one-shot schedules the next from its callback
    public static let timerSpread = "timer.spread100ms"  // 100,000 timers due over 100 ms: time to last fire
    public static let timerTick = "timer.repeat.tick"  // one repeating timer, always due: one tick
    public static let pending1K = "timer.pending1k.insertCancel"  // insert + cancel one timer among 1,000 pending
    public static let pending1M = "timer.pending1M.insertCancel"  // the same among 1,000,000 pending
    // 2. Custom source (source0)
    public static let source0 = "source0.signalPerform"  // signalled from its own callout, performed
    // 5. Observers (same loop as source0)
    public static let source0Observer = "source0.signalPerform.observer1"  // one observer, all activities
    public static let source0Recorder = "source0.signalPerform.activityRecorder"  // RunLoopTesting's recorder
    // 3. Cross-thread hand-off (one iteration = one round trip)
    public static let crossPerform = "xthread.perform"
    public static let crossSignal = "xthread.signalWake"
    public static let crossSignalAndWakeUp = "xthread.signalAndWakeUp"
    // 4. fd readiness
    public static let pingPong = "fd.pingpong"
    public static let pingPongPrecise = "fd.pingpong.precise"
    // libevent with its locking on (evthread_use_pthreads): event_active / event_add callable from any
    // thread, as RunLoopKit's signal() and timer add are.
    public static let source0ThreadSafe = "source0.signalPerform.threadSafe"
    public static let pending1KThreadSafe = "timer.pending1k.insertCancel.threadSafe"
    // 6. Memory
    public static let memTimers = "mem.pendingTimer"
    public static let memSources = "mem.customSource"
    public static let memPorts = "mem.portSource"
    // 7. TCP echo
    public static let tcpEcho = "tcp.echo"  // one 64-byte message echoed over loopback TCP
    // 8. WebSocket echo (the same shape as tcp.echo, so the framing's cost is the difference)
    public static let wsEcho = "ws.echo"  // one 64-byte binary message, masked by the client

    public static let timerBatchCount = 100_000
    public static let timerChainCount = 100_000
    public static let spreadCount = 100_000
    public static let spreadNanoseconds: UInt64 = 100_000_000
    public static let tickCount = 100_000
    public static let source0Count = 100_000
    public static let pingPongCount = 10_000
    public static let memTimerCount = 100_000
    public static let memSourceCount = 10_000
    public static let memPortCount = 1_000
    /// TCP echo: an echo server on 127.0.0.1 port 0 and this many client connections, all on one loop;
    /// each client keeps one message of `tcpEchoMessageSize` bytes in flight for `tcpEchoRoundTrips`
    /// round trips per iteration (operations per iteration: connections x round trips).
    public static let tcpEchoConnections = 100
    public static let tcpEchoRoundTrips = 200
    public static let tcpEchoMessageSize = 64

    public static func name(_ workload: String, _ operations: Int) -> String { "\(workload)#\(operations)" }
}

/// Pending timer `index` of `count` is due 1 h + index/count h after "now": an even spread added in
/// ascending order, identical for every system. The probe used by the insert/cancel workloads is due at
/// 1.5 h, in the middle of the pending set.
public func farDeadlineOffset(_ index: Int, of count: Int) -> UInt64 {
    let hour: UInt64 = 3_600_000_000_000
    return hour + UInt64(index) * hour / UInt64(count)
}
public let probeDeadlineOffset: UInt64 = 5_400_000_000_000

/// The configuration every benchmark uses: wall clock and malloc counts, nanoseconds, a short run.
public func benchConfiguration(
    iterations: Int,
    seconds: Int = 1,
    warmup: Int = 1,
    memory: Bool = false
) -> Benchmark.Configuration {
    Benchmark.Configuration(
        metrics: memory ? [.wallClock, .mallocCountTotal, .memoryLeakedBytes] : [.wallClock, .mallocCountTotal],
        timeUnits: .nanoseconds,
        // Raw counts in the exported samples (the default scales them to K or M).
        units: [.mallocCountTotal: .count, .memoryLeakedBytes: .count],
        warmupIterations: warmup,
        scalingFactor: .one,
        maxDuration: .seconds(seconds),
        maxIterations: iterations
    )
}

/// A mutable cell shared by a benchmark's callouts. Each workload touches it from one thread at a time
/// (the loop's), with a semaphore hand-off where another thread reads it.
///
/// The fields live behind a pointer: a class's stored property is checked for exclusive access at run
/// time, a `swift_beginAccess` call per access from a callout (`@exclusivity(unchecked)` is not honoured
/// by another module's accesses). The source0 row's callout made two per perform, where the C
/// baseline's callback increments a plain field.
public final class Counter: @unchecked Sendable {
    @usableFromInline let fields = UnsafeMutablePointer<(value: Int, target: Int, last: UInt64)>.allocate(capacity: 1)

    @inlinable public var value: Int {
        get { fields.pointee.value }
        set { fields.pointee.value = newValue }
    }
    @inlinable public var target: Int {
        get { fields.pointee.target }
        set { fields.pointee.target = newValue }
    }
    @inlinable public var last: UInt64 {
        get { fields.pointee.last }
        set { fields.pointee.last = newValue }
    }

    public init() { fields.initialize(to: (0, 0, 0)) }

    deinit { fields.deallocate() }
}

/// Holds state a benchmark builds lazily on its first iteration (on the thread that runs the loop, which
/// a setup hook cannot guarantee) and its teardown hook releases.
public final class Holder<State>: @unchecked Sendable {
    public var state: State?
    public init() {}
}

/// Benchmark state bound to the loop of the thread that built it.
public protocol LoopBoundState: AnyObject {
    associatedtype Loop: AnyObject
    var loop: Loop { get }
    func tearDown()
}

extension Holder where State: LoopBoundState {
    /// The state for `loop` (the calling thread's): built by `make` on first use, and rebuilt — the old
    /// one torn down — when the harness runs an iteration on another thread, whose loop is another.
    public func state(for loop: State.Loop, orMake make: () throws -> State) rethrows -> State {
        if let state, state.loop === loop { return state }
        state?.tearDown()
        let made = try make()
        state = made
        return made
    }
}
