// libevent 2.1 directly: the workloads are written in C (Sources/LibeventBaseline); each benchmark
// iteration is one C call that runs the whole batch, timed by the harness like every other system.
import BenchCommon
import Benchmark
import LibeventBaseline

let benchmarks: @Sendable () -> Void = {
    timerBenchmarks()
    sourceBenchmarks()
    crossThreadBenchmarks()
    pingPongBenchmarks()
    memoryBenchmarks()
    tcpEchoBenchmarks()
}

/// An event_base kept for the whole benchmark (default configuration unless `precise`).
private final class Loop: @unchecked Sendable {
    let pointer: OpaquePointer
    init(precise: Bool = false, threadSafe: Bool = false) {
        pointer = lev_loop_new_with(precise ? 1 : 0, threadSafe ? 1 : 0)!
    }
    deinit { lev_loop_free(pointer) }
}

// MARK: 1. timers

private func timerBenchmarks() {
    let batch = Workload.timerBatchCount
    let loop = Holder<Loop>()
    Benchmark(Workload.name(Workload.timerBatch, batch), configuration: benchConfiguration(iterations: 40)) { benchmark in
        let fired = lev_timer_batch(loop.state!.pointer, Int32(batch))
        precondition(fired == batch)
    } setup: {
        loop.state = Loop()
    } teardown: {
        loop.state = nil
    }

    let chain = Workload.timerChainCount
    let chainLoop = Holder<Loop>()
    Benchmark(Workload.name(Workload.timerChain, chain), configuration: benchConfiguration(iterations: 40)) { benchmark in
        let fired = lev_timer_chain(chainLoop.state!.pointer, Int32(chain))
        precondition(fired == chain)
    } setup: {
        chainLoop.state = Loop()
    } teardown: {
        chainLoop.state = nil
    }

    let spreadLoop = Holder<Loop>()
    Benchmark(Workload.name(Workload.timerSpread, 1), configuration: benchConfiguration(iterations: 10, seconds: 2)) { benchmark in
        blackHole(lev_timer_spread(spreadLoop.state!.pointer, Int32(Workload.spreadCount), Workload.spreadNanoseconds))
    } setup: {
        spreadLoop.state = Loop()
    } teardown: {
        spreadLoop.state = nil
    }

    let ticks = Workload.tickCount
    let tickLoop = Holder<Loop>()
    Benchmark(Workload.name(Workload.timerTick, ticks), configuration: benchConfiguration(iterations: 40)) { benchmark in
        let fired = lev_timer_ticks(tickLoop.state!.pointer, Int32(ticks))
        precondition(fired == ticks)
    } setup: {
        tickLoop.state = Loop()
    } teardown: {
        tickLoop.state = nil
    }

    for (workload, pending, iterations, threadSafe) in [
        (Workload.pending1K, 1_000, 200, false), (Workload.pending1M, 1_000_000, 50, false),
        (Workload.pending1KThreadSafe, 1_000, 200, true)
    ] {
        let operations = 10_000
        let pendingLoop = Holder<Loop>()
        let timers = Holder<OpaquePointer>()
        Benchmark(
            Workload.name(workload, operations),
            configuration: benchConfiguration(iterations: iterations, seconds: 2)
        ) { benchmark in
            lev_pending_insert_cancel(timers.state!, Int32(operations))
        } setup: {
            pendingLoop.state = Loop(threadSafe: threadSafe)
            timers.state = lev_pending_new(pendingLoop.state!.pointer, Int32(pending))
        } teardown: {
            lev_pending_free(timers.state)
            timers.state = nil
            pendingLoop.state = nil
        }
    }
}

// MARK: 2. custom source (event_active from its own callback)

private func sourceBenchmarks() {
    let performs = Workload.source0Count
    for (workload, threadSafe) in [(Workload.source0, false), (Workload.source0ThreadSafe, true)] {
        let loop = Holder<Loop>()
        Benchmark(Workload.name(workload, performs), configuration: benchConfiguration(iterations: 40)) { benchmark in
            let fired = lev_source0(loop.state!.pointer, Int32(performs))
            precondition(fired == performs)
        } setup: {
            loop.state = Loop(threadSafe: threadSafe)
        } teardown: {
            loop.state = nil
        }
    }
}

// MARK: 3. cross-thread hand-off (eventfd write, loop callback posts a semaphore)

private func crossThreadBenchmarks() {
    // libevent has one mechanism for both hand-offs: wake the loop's watched eventfd.
    for workload in [Workload.crossPerform, Workload.crossSignal] {
        let thread = Holder<OpaquePointer>()
        Benchmark(
            Workload.name(workload, 1),
            configuration: benchConfiguration(iterations: 20_000, seconds: 2, warmup: 200)
        ) { benchmark in
            lev_xthread_roundtrip(thread.state!)
        } setup: {
            thread.state = lev_xthread_start(0)
        } teardown: {
            lev_xthread_stop(thread.state)
            thread.state = nil
        }
    }
}

// MARK: 4. fd ping-pong

private func pingPongBenchmarks() {
    let roundTrips = Workload.pingPongCount
    for (workload, precise) in [(Workload.pingPong, false), (Workload.pingPongPrecise, true)] {
        let loop = Holder<Loop>()
        let pingPong = Holder<OpaquePointer>()
        Benchmark(Workload.name(workload, roundTrips), configuration: benchConfiguration(iterations: 40, seconds: 2)) { benchmark in
            let done = lev_pingpong_run(pingPong.state!, Int32(roundTrips))
            precondition(done == roundTrips)
        } setup: {
            loop.state = Loop(precise: precise)
            pingPong.state = lev_pingpong_new(loop.state!.pointer)
        } teardown: {
            lev_pingpong_free(pingPong.state)
            pingPong.state = nil
            loop.state = nil
        }
    }
}

// MARK: 6. memory

private func memoryBenchmarks() {
    let timerCount = Workload.memTimerCount
    Benchmark(
        Workload.name(Workload.memTimers, timerCount),
        configuration: benchConfiguration(iterations: 10, seconds: 2, memory: true)
    ) { benchmark in
        let loop = Loop()
        let group = lev_group_new(Int32(timerCount))!
        benchmark.startMeasurement()
        lev_group_add_timers(group, loop.pointer)
        benchmark.stopMeasurement()
        lev_group_free(group)
    }

    let sourceCount = Workload.memSourceCount
    Benchmark(
        Workload.name(Workload.memSources, sourceCount),
        configuration: benchConfiguration(iterations: 20, seconds: 2, memory: true)
    ) { benchmark in
        let loop = Loop()
        let group = lev_group_new(Int32(sourceCount))!
        benchmark.startMeasurement()
        lev_group_add_sources(group, loop.pointer)
        benchmark.stopMeasurement()
        lev_group_free(group)
    }

    let portCount = Workload.memPortCount
    Benchmark(
        Workload.name(Workload.memPorts, portCount),
        configuration: benchConfiguration(iterations: 20, seconds: 2, memory: true)
    ) { benchmark in
        let loop = Loop()
        var pipes: [Int32] = Array(repeating: -1, count: 2 * portCount)
        var readEnds: [Int32] = Array(repeating: -1, count: portCount)
        for index in 0..<portCount {
            var pair: [Int32] = [-1, -1]
            precondition(bs_pipe(&pair) == 0, "pipe failed")
            pipes[2 * index] = pair[0]
            pipes[2 * index + 1] = pair[1]
            readEnds[index] = pair[0]
        }
        let group = lev_group_new(Int32(portCount))!
        benchmark.startMeasurement()
        readEnds.withUnsafeBufferPointer { lev_group_add_ports(group, loop.pointer, $0.baseAddress) }
        benchmark.stopMeasurement()
        lev_group_free(group)
        for fd in pipes { bs_close(fd) }
    }
}

// MARK: 7. TCP echo (bufferevents)

private func tcpEchoBenchmarks() {
    let roundTrips = Workload.tcpEchoRoundTrips
    let messages = Workload.tcpEchoConnections * roundTrips
    let loop = Holder<Loop>()
    let echo = Holder<OpaquePointer>()
    Benchmark(Workload.name(Workload.tcpEcho, messages), configuration: benchConfiguration(iterations: 20, seconds: 2)) { benchmark in
        let done = lev_tcpecho_run(echo.state!, Int32(roundTrips))
        precondition(done == messages, "echoed \(done) of \(messages)")
    } setup: {
        loop.state = Loop()
        echo.state = lev_tcpecho_new(loop.state!.pointer, Int32(Workload.tcpEchoConnections), Int32(Workload.tcpEchoMessageSize))
        precondition(echo.state != nil, "tcp.echo set-up failed")
    } teardown: {
        lev_tcpecho_free(echo.state)
        echo.state = nil
        loop.state = nil
    }
}
