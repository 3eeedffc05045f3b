// Foundation's RunLoop on Linux (swift-corelibs-foundation, CFRunLoop underneath). Timers use Foundation's
// `Timer` and `RunLoop.add(_:forMode:)`; custom sources, observers, cross-thread wake-ups and sockets have
// no Foundation API on Linux, so they use the CoreFoundation calls Foundation's RunLoop is built on
// (CFRunLoopSource, CFRunLoopObserver, CFRunLoopWakeUp, CFSocket). Loops run with CFRunLoopRunInMode
// (`returnAfterSourceHandled: false`), which is what `RunLoop.run(mode:before:)` wraps.
// This file does not import RunLoopKit: `RunLoop` here is Foundation's.
import BenchCommon
import Benchmark
import CoreFoundation
import Foundation

let benchmarks: @Sendable () -> Void = {
    timerBenchmarks()
    pendingTimerBenchmarks()
    sourceBenchmarks()
    crossThreadBenchmarks()
    pingPongBenchmarks()
    memoryBenchmarks()
}

/// A run-loop mode as both Foundation and CoreFoundation name it.
private struct Mode: @unchecked Sendable {
    let foundation: RunLoop.Mode
    let cf: CFRunLoopMode

    init(_ name: String) {
        foundation = RunLoop.Mode(name)
        cf = CFStringCreateWithCString(nil, name, CFStringBuiltInEncodings.UTF8.rawValue)
    }
}

/// Runs `mode` on the current thread until it is stopped or has nothing left.
@discardableResult
private func run(_ mode: Mode) -> CFRunLoopRunResult {
    CFRunLoopRunInMode(mode.cf, 1e9, false)
}

// MARK: 1. timers

private func timerBenchmarks() {
    let batch = Workload.timerBatchCount
    Benchmark(Workload.name(Workload.timerBatch, batch), configuration: benchConfiguration(iterations: 40)) { benchmark in
        let mode = Mode("bench.timer.batch")
        let loop = RunLoop.current
        let counter = Counter()
        let callback: @Sendable (Timer) -> Void = { _ in counter.value += 1 }
        benchmark.startMeasurement()
        for _ in 0..<batch { loop.add(Timer(timeInterval: 0, repeats: false, block: callback), forMode: mode.foundation) }
        run(mode)
        benchmark.stopMeasurement()
        precondition(counter.value == batch, "fired \(counter.value) of \(batch)")
    }

    let chain = Workload.timerChainCount
    Benchmark(Workload.name(Workload.timerChain, chain), configuration: benchConfiguration(iterations: 40)) { benchmark in
        let mode = Mode("bench.timer.chain")
        let state = TimerChain(mode: mode, count: chain)
        benchmark.startMeasurement()
        state.scheduleNext()
        run(mode)
        benchmark.stopMeasurement()
        precondition(state.fired == chain, "fired \(state.fired) of \(chain)")
        state.callback = nil
    }

    let spread = Workload.spreadCount
    Benchmark(Workload.name(Workload.timerSpread, 1), configuration: benchConfiguration(iterations: 10, seconds: 2)) { benchmark in
        let mode = Mode("bench.timer.spread")
        let loop = RunLoop.current
        let counter = Counter()
        let callback: @Sendable (Timer) -> Void = { _ in counter.value += 1 }
        let span = Double(Workload.spreadNanoseconds) / 1e9
        benchmark.startMeasurement()
        let start = Date()
        for index in 0..<spread {
            let due = start.addingTimeInterval(span * Double(index) / Double(spread))
            loop.add(Timer(fire: due, interval: 0, repeats: false, block: callback), forMode: mode.foundation)
        }
        run(mode)
        benchmark.stopMeasurement()
        precondition(counter.value == spread)
    }

    let ticks = Workload.tickCount
    Benchmark(Workload.name(Workload.timerTick, ticks), configuration: benchConfiguration(iterations: 40, seconds: 2)) { benchmark in
        let mode = Mode("bench.timer.tick")
        let counter = Counter()
        // The smallest positive interval (zero means one-shot): due again on every pass.
        let timer = Timer(timeInterval: 1e-9, repeats: true) { timer in
            counter.value += 1
            if counter.value >= ticks { timer.invalidate() }
        }
        benchmark.startMeasurement()
        RunLoop.current.add(timer, forMode: mode.foundation)
        run(mode)
        benchmark.stopMeasurement()
        precondition(counter.value == ticks)
    }
}

/// A chain of zero-delay one-shot timers, each scheduled by the previous one's callback.
private final class TimerChain: @unchecked Sendable {
    let mode: Mode
    let count: Int
    var fired = 0
    var callback: (@Sendable (Timer) -> Void)?

    init(mode: Mode, count: Int) {
        self.mode = mode
        self.count = count
        callback = { [unowned self] _ in
            fired += 1
            if fired < count { scheduleNext() }
        }
    }

    func scheduleNext() {
        RunLoop.current.add(Timer(timeInterval: 0, repeats: false, block: callback!), forMode: mode.foundation)
    }
}

// MARK: 1c. pending timers: insert + cancel among N

/// N pending far-future Foundation timers; the probe is a CFRunLoopTimer, the object under Foundation's
/// Timer, because only CF can remove a timer from a mode and add it again (Foundation can only invalidate).
private final class PendingTimers: @unchecked Sendable {
    let loop: CFRunLoop
    let mode: Mode
    var timers: [Timer] = []
    let probe: CFRunLoopTimer

    init(count: Int, mode: Mode) {
        loop = CFRunLoopGetCurrent()
        self.mode = mode
        let now = Date()
        let noop: @Sendable (Timer) -> Void = { _ in }
        timers.reserveCapacity(count)
        for index in 0..<count {
            let due = now.addingTimeInterval(Double(farDeadlineOffset(index, of: count)) / 1e9)
            let timer = Timer(fire: due, interval: 0, repeats: false, block: noop)
            RunLoop.current.add(timer, forMode: mode.foundation)
            timers.append(timer)
        }
        let probeDate = CFAbsoluteTimeGetCurrent() + Double(probeDeadlineOffset) / 1e9
        probe = CFRunLoopTimerCreate(nil, probeDate, 0, 0, 0, { _, _ in }, nil)
    }

    func tearDown() {
        for timer in timers { timer.invalidate() }
        CFRunLoopTimerInvalidate(probe)
        timers = []
    }
}

private func pendingTimerBenchmarks() {
    // Foundation keeps a mode's timers in a sorted array: insertion and removal move O(n) entries, so
    // the 1M case runs 100 operations per iteration instead of 10,000.
    for (workload, pending, operations, iterations) in [
        (Workload.pending1K, 1_000, 10_000, 100), (Workload.pending1M, 1_000_000, 100, 10)
    ] {
        let holder = Holder<PendingTimers>()
        Benchmark(
            Workload.name(workload, operations),
            configuration: benchConfiguration(iterations: iterations, seconds: 2)
        ) { benchmark in
            let state = holder.state(for: CFRunLoopGetCurrent()) { PendingTimers(count: pending, mode: Mode("bench.pending.\(pending)")) }
            let loop = state.loop, mode = state.mode.cf, probe = state.probe
            benchmark.startMeasurement()
            for _ in 0..<operations {
                CFRunLoopAddTimer(loop, probe, mode)
                CFRunLoopRemoveTimer(loop, probe, mode)
            }
            benchmark.stopMeasurement()
        } teardown: {
            holder.state?.tearDown()
            holder.state = nil
        }
    }
}

// MARK: 2 + 5. custom source dispatch (CFRunLoopSource), with and without an observer

private final class SelfSignallingSource: @unchecked Sendable {
    let loop: CFRunLoop
    let mode: Mode
    let counter = Counter()
    let observed = Counter()
    var source: CFRunLoopSource!
    var observer: CFRunLoopObserver?

    init(mode: Mode, observer withObserver: Bool) {
        loop = CFRunLoopGetCurrent()
        self.mode = mode
        var context = CFRunLoopSourceContext()
        context.info = Unmanaged.passUnretained(self).toOpaque()
        context.perform = { info in
            let this = Unmanaged<SelfSignallingSource>.fromOpaque(info!).takeUnretainedValue()
            this.counter.value += 1
            if this.counter.value < this.counter.target {
                CFRunLoopSourceSignal(this.source)
            } else {
                CFRunLoopStop(this.loop)
            }
        }
        source = CFRunLoopSourceCreate(nil, 0, &context)
        CFRunLoopAddSource(loop, source, mode.cf)
        if withObserver {
            var observerContext = CFRunLoopObserverContext()
            observerContext.info = Unmanaged.passUnretained(observed).toOpaque()
            observer = CFRunLoopObserverCreate(
                nil, CFRunLoopActivity.allActivities.rawValue, true, 0,
                { _, _, info in Unmanaged<Counter>.fromOpaque(info!).takeUnretainedValue().value += 1 },
                &observerContext)
            CFRunLoopAddObserver(loop, observer, mode.cf)
        }
    }

    func runOnce(_ performs: Int) {
        counter.value = 0
        counter.target = performs
        CFRunLoopSourceSignal(source)
        run(mode)
        precondition(counter.value == performs)
    }

    func tearDown() {
        CFRunLoopSourceInvalidate(source)
        if let observer { CFRunLoopObserverInvalidate(observer) }
    }
}

private func sourceBenchmarks() {
    let performs = Workload.source0Count
    for (workload, withObserver) in [(Workload.source0, false), (Workload.source0Observer, true)] {
        let holder = Holder<SelfSignallingSource>()
        Benchmark(Workload.name(workload, performs), configuration: benchConfiguration(iterations: 20, seconds: 2)) { benchmark in
            let state = holder.state(for: CFRunLoopGetCurrent()) { SelfSignallingSource(mode: Mode("bench.\(workload)"), observer: withObserver) }
            benchmark.startMeasurement()
            state.runOnce(performs)
            benchmark.stopMeasurement()
        } teardown: {
            holder.state?.tearDown()
            holder.state = nil
        }
    }
}

// MARK: 3. cross-thread hand-off

/// A Foundation run loop on its own thread, sleeping in the default mode, with a CFRunLoopSource that
/// posts `done` when performed.
private final class LoopThread: @unchecked Sendable {
    let ready = bs_sem_new()!
    let done = bs_sem_new()!
    var loop: RunLoop!
    var cfLoop: CFRunLoop!
    var source: CFRunLoopSource!
    var thread: OpaquePointer?
    var stopping = false
    /// Built once so a round trip measures the hand-off, not closure allocation.
    var postDone: (@Sendable () -> Void)!

    init() {
        postDone = { [unowned self] in bs_sem_post(self.done) }
        thread = bs_thread_start(
            { context in
                Unmanaged<LoopThread>.fromOpaque(context!).takeUnretainedValue().main()
            }, Unmanaged.passUnretained(self).toOpaque())
        bs_sem_wait(ready)
    }

    private func main() {
        loop = RunLoop.current
        cfLoop = CFRunLoopGetCurrent()
        var context = CFRunLoopSourceContext()
        context.info = Unmanaged.passUnretained(self).toOpaque()
        context.perform = { info in
            bs_sem_post(Unmanaged<LoopThread>.fromOpaque(info!).takeUnretainedValue().done)
        }
        source = CFRunLoopSourceCreate(nil, 0, &context)
        CFRunLoopAddSource(cfLoop, source, kCFRunLoopDefaultMode)
        bs_sem_post(ready)
        while !stopping { _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1e9, false) }
        CFRunLoopSourceInvalidate(source)
    }

    func stop() {
        loop.perform(inModes: [.default]) { [unowned self] in
            stopping = true
            CFRunLoopStop(CFRunLoopGetCurrent())
        }
        CFRunLoopWakeUp(cfLoop)
        bs_thread_join(thread)
        bs_sem_free(ready)
        bs_sem_free(done)
    }
}

private func crossThreadBenchmarks() {
    // RunLoop.perform(inModes:) does not wake a sleeping loop (CFRunLoopPerformBlock), so the hand-off is
    // perform + CFRunLoopWakeUp; the source hand-off is CFRunLoopSourceSignal + CFRunLoopWakeUp.
    let variants: [(String, @Sendable (LoopThread) -> Void)] = [
        (
            Workload.crossPerform,
            { x in
                x.loop.perform(inModes: [.default], block: x.postDone); CFRunLoopWakeUp(x.cfLoop)
            }
        ),
        (
            Workload.crossSignal,
            { x in
                CFRunLoopSourceSignal(x.source); CFRunLoopWakeUp(x.cfLoop)
            }
        )
    ]
    for (workload, handOff) in variants {
        let holder = Holder<LoopThread>()
        Benchmark(
            Workload.name(workload, 1),
            configuration: benchConfiguration(iterations: 20_000, seconds: 2, warmup: 200)
        ) { benchmark in
            let x = holder.state!
            handOff(x)
            bs_sem_wait(x.done)
        } setup: {
            holder.state = LoopThread()
        } teardown: {
            holder.state?.stop()
            holder.state = nil
        }
    }
}

// MARK: 4. fd ping-pong (CFSocket read callbacks)

private final class PingPong: @unchecked Sendable {
    let loop: CFRunLoop
    let mode = Mode("bench.fd.pingpong")
    let counter = Counter()
    var fds: [Int32] = [-1, -1]
    var sockets: [CFSocket] = []
    var sources: [CFRunLoopSource] = []

    init() {
        loop = CFRunLoopGetCurrent()
        guard bs_socketpair(&fds) == 0 else { fatalError("socketpair failed") }
        var context = CFSocketContext(
            version: 0, info: Unmanaged.passUnretained(self).toOpaque(), retain: nil, release: nil, copyDescription: nil)
        let callbackA: CFSocketCallBack = { socket, _, _, _, info in
            let this = Unmanaged<PingPong>.fromOpaque(info!).takeUnretainedValue()
            let fd = CFSocketGetNative(socket)
            _ = bs_read1(fd)
            this.counter.value += 1
            if this.counter.value < this.counter.target { _ = bs_write1(fd) } else { CFRunLoopStop(this.loop) }
        }
        let callbackB: CFSocketCallBack = { socket, _, _, _, _ in
            let fd = CFSocketGetNative(socket)
            _ = bs_read1(fd)
            _ = bs_write1(fd)
        }
        for (fd, callback) in [(fds[0], callbackA), (fds[1], callbackB)] {
            let socket = CFSocketCreateWithNative(nil, fd, CFSocketCallBackType.readCallBack.rawValue, callback, &context)!
            // We close the descriptors ourselves.
            CFSocketSetSocketFlags(socket, CFSocketGetSocketFlags(socket) & ~CFOptionFlags(kCFSocketCloseOnInvalidate))
            let source = CFSocketCreateRunLoopSource(nil, socket, 0)!
            CFRunLoopAddSource(loop, source, mode.cf)
            sockets.append(socket)
            sources.append(source)
        }
    }

    func runOnce(_ roundTrips: Int) {
        counter.value = 0
        counter.target = roundTrips
        _ = bs_write1(fds[0])
        run(mode)
        precondition(counter.value == roundTrips)
    }

    func tearDown() {
        for socket in sockets { CFSocketInvalidate(socket) }
        bs_close(fds[0])
        bs_close(fds[1])
    }
}

private func pingPongBenchmarks() {
    let roundTrips = 2_000
    let holder = Holder<PingPong>()
    Benchmark(Workload.name(Workload.pingPong, roundTrips), configuration: benchConfiguration(iterations: 40, seconds: 2)) { benchmark in
        let state = holder.state(for: CFRunLoopGetCurrent()) { PingPong() }
        benchmark.startMeasurement()
        state.runOnce(roundTrips)
        benchmark.stopMeasurement()
    } teardown: {
        holder.state?.tearDown()
        holder.state = nil
    }
}

// MARK: 6. memory

private func memoryBenchmarks() {
    nonisolated(unsafe) var generation = 0
    /// A mode never used before, created before the measurement starts.
    func freshMode() -> Mode {
        generation += 1
        let mode = Mode("bench.mem.\(generation)")
        var context = CFRunLoopSourceContext()
        let creator = CFRunLoopSourceCreate(nil, 0, &context)
        CFRunLoopAddSource(CFRunLoopGetCurrent(), creator, mode.cf)
        CFRunLoopSourceInvalidate(creator)
        return mode
    }

    let timerCount = Workload.memTimerCount
    Benchmark(
        Workload.name(Workload.memTimers, timerCount),
        configuration: benchConfiguration(iterations: 10, seconds: 2, memory: true)
    ) { benchmark in
        let mode = freshMode()
        let loop = RunLoop.current
        let now = Date()
        let noop: @Sendable (Timer) -> Void = { _ in }
        var timers: [Timer] = []
        timers.reserveCapacity(timerCount)
        benchmark.startMeasurement()
        for index in 0..<timerCount {
            let due = now.addingTimeInterval(Double(farDeadlineOffset(index, of: timerCount)) / 1e9)
            let timer = Timer(fire: due, interval: 0, repeats: false, block: noop)
            loop.add(timer, forMode: mode.foundation)
            timers.append(timer)
        }
        benchmark.stopMeasurement()
        for timer in timers { timer.invalidate() }
    }

    let sourceCount = Workload.memSourceCount
    Benchmark(
        Workload.name(Workload.memSources, sourceCount),
        configuration: benchConfiguration(iterations: 20, seconds: 2, memory: true)
    ) { benchmark in
        let mode = freshMode()
        let loop = CFRunLoopGetCurrent()
        var sources: [CFRunLoopSource] = []
        sources.reserveCapacity(sourceCount)
        var context = CFRunLoopSourceContext()
        context.perform = { _ in }
        benchmark.startMeasurement()
        for _ in 0..<sourceCount {
            let source = CFRunLoopSourceCreate(nil, 0, &context)!
            CFRunLoopAddSource(loop, source, mode.cf)
            sources.append(source)
        }
        benchmark.stopMeasurement()
        for source in sources { CFRunLoopSourceInvalidate(source) }
    }

    let portCount = Workload.memPortCount
    Benchmark(
        Workload.name(Workload.memPorts, portCount),
        configuration: benchConfiguration(iterations: 20, seconds: 2, memory: true)
    ) { benchmark in
        let mode = freshMode()
        let loop = CFRunLoopGetCurrent()
        var pipes: [Int32] = Array(repeating: -1, count: 2 * portCount)
        for index in 0..<portCount {
            var pair: [Int32] = [-1, -1]
            precondition(bs_pipe(&pair) == 0, "pipe failed")
            pipes[2 * index] = pair[0]
            pipes[2 * index + 1] = pair[1]
        }
        var sockets: [CFSocket] = []
        sockets.reserveCapacity(portCount)
        var context = CFSocketContext()
        benchmark.startMeasurement()
        for index in 0..<portCount {
            let socket = CFSocketCreateWithNative(
                nil, pipes[2 * index], CFSocketCallBackType.readCallBack.rawValue, { _, _, _, _, _ in }, &context)!
            let source = CFSocketCreateRunLoopSource(nil, socket, 0)
            CFRunLoopAddSource(loop, source, mode.cf)
            sockets.append(socket)
        }
        benchmark.stopMeasurement()
        for socket in sockets {
            CFSocketSetSocketFlags(socket, CFSocketGetSocketFlags(socket) & ~CFOptionFlags(kCFSocketCloseOnInvalidate))
            CFSocketInvalidate(socket)
        }
        for fd in pipes { bs_close(fd) }
    }
}

// Benchmark states rebuilt per loop thread by Holder.state(for:orMake:).
extension PendingTimers: LoopBoundState {}
extension PingPong: LoopBoundState {}
extension SelfSignallingSource: LoopBoundState {}
