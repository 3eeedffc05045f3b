// SwiftNIO: a single-threaded SelectableEventLoop (MultiThreadedEventLoopGroup(numberOfThreads: 1)).
// NIO's loop runs on its own thread, so the loop-local workloads are submitted with one `execute` and
// the benchmark thread waits on a semaphore the last operation posts: one cross-thread hand-off
// (about 12 µs) per iteration of 10,000-100,000 operations, i.e. 0.1-1.2 ns per operation.
// Timers are `scheduleTask`, a repeating timer `scheduleRepeatedTask`, the custom source `execute`
// from the loop itself, the fd ping-pong two NIO channels over a socket pair.
import BenchCommon
import Benchmark
import NIOCore
import NIOPosix

let benchmarks: @Sendable () -> Void = {
    timerBenchmarks()
    pendingTimerBenchmarks()
    sourceBenchmarks()
    crossThreadBenchmarks()
    pingPongBenchmarks()
    memoryBenchmarks()
    tcpEchoBenchmarks()
    webSocketEchoBenchmarks()
}

/// One single-threaded event loop group and a semaphore the workloads post when done.
final class Loop: @unchecked Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop: EventLoop
    let done = bs_sem_new()!

    init() { loop = group.next() }

    /// Runs `body` on the loop and waits until something posts `done`.
    func runAndWait(_ body: @escaping @Sendable () -> Void) {
        loop.execute(body)
        bs_sem_wait(done)
    }

    func shutdown() {
        try! group.syncShutdownGracefully()
        bs_sem_free(done)
    }
}

// MARK: 1. timers

private func timerBenchmarks() {
    let batch = Workload.timerBatchCount
    let batchLoop = Holder<Loop>()
    Benchmark(Workload.name(Workload.timerBatch, batch), configuration: benchConfiguration(iterations: 40)) { benchmark in
        let l = batchLoop.state!, loop = l.loop
        let counter = Counter()
        let task: @Sendable () -> Void = {
            counter.value += 1
            if counter.value == batch { bs_sem_post(l.done) }
        }
        l.runAndWait {
            for _ in 0..<batch { loop.scheduleTask(in: .zero, task) }
        }
        precondition(counter.value == batch)
    } setup: {
        batchLoop.state = Loop()
    } teardown: {
        batchLoop.state?.shutdown(); batchLoop.state = nil
    }

    let chain = Workload.timerChainCount
    let chainLoop = Holder<Loop>()
    Benchmark(Workload.name(Workload.timerChain, chain), configuration: benchConfiguration(iterations: 40)) { benchmark in
        let state = TimerChain(chainLoop.state!, count: chain)
        chainLoop.state!.runAndWait { state.scheduleNext() }
        precondition(state.fired == chain)
    } setup: {
        chainLoop.state = Loop()
    } teardown: {
        chainLoop.state?.shutdown(); chainLoop.state = nil
    }

    let spread = Workload.spreadCount
    let spreadLoop = Holder<Loop>()
    Benchmark(Workload.name(Workload.timerSpread, 1), configuration: benchConfiguration(iterations: 10, seconds: 2)) { benchmark in
        let l = spreadLoop.state!, loop = l.loop
        let counter = Counter()
        let task: @Sendable () -> Void = {
            counter.value += 1
            if counter.value == spread { bs_sem_post(l.done) }
        }
        let start = bs_now_ns()
        l.runAndWait {
            for index in 0..<spread {
                let due = start + UInt64(index) * Workload.spreadNanoseconds / UInt64(spread)
                loop.scheduleTask(deadline: .uptimeNanoseconds(due), task)
            }
        }
        precondition(counter.value == spread)
    } setup: {
        spreadLoop.state = Loop()
    } teardown: {
        spreadLoop.state?.shutdown(); spreadLoop.state = nil
    }

    let ticks = Workload.tickCount
    let tickLoop = Holder<Loop>()
    Benchmark(Workload.name(Workload.timerTick, ticks), configuration: benchConfiguration(iterations: 40)) { benchmark in
        let l = tickLoop.state!, loop = l.loop
        let counter = Counter()
        l.runAndWait {
            loop.scheduleRepeatedTask(initialDelay: .zero, delay: .zero) { task in
                counter.value += 1
                if counter.value == ticks {
                    task.cancel()
                    bs_sem_post(l.done)
                }
            }
        }
        precondition(counter.value == ticks)
    } setup: {
        tickLoop.state = Loop()
    } teardown: {
        tickLoop.state?.shutdown(); tickLoop.state = nil
    }
}

/// A chain of zero-delay scheduled tasks, each scheduled by the previous one.
private final class TimerChain: @unchecked Sendable {
    let l: Loop
    let count: Int
    var fired = 0
    var task: (@Sendable () -> Void)?

    init(_ l: Loop, count: Int) {
        self.l = l
        self.count = count
        task = { [unowned self] in
            fired += 1
            if fired < count { scheduleNext() } else { bs_sem_post(l.done) }
        }
    }

    func scheduleNext() { l.loop.scheduleTask(in: .zero, task!) }
}

// MARK: 1c. pending timers: insert + cancel among N

private final class PendingTimers: @unchecked Sendable {
    let l = Loop()
    var scheduled: [Scheduled<Void>] = []

    init(count: Int) {
        let loop = l.loop
        let now = NIODeadline.now()
        l.runAndWait { [self] in
            scheduled.reserveCapacity(count)
            for index in 0..<count {
                let due = now + .nanoseconds(Int64(farDeadlineOffset(index, of: count)))
                scheduled.append(loop.scheduleTask(deadline: due) {})
            }
            bs_sem_post(l.done)
        }
    }

    /// Shutting the loop down fails every pending task in one pass; cancelling them one by one would
    /// cost O(n) each (see below).
    func tearDown() {
        l.shutdown()
        scheduled = []
    }
}

private func pendingTimerBenchmarks() {
    // NIO cancels a scheduled task by a linear search of its heap's storage (Heap.remove(value:)), so
    // the 1M case runs 100 operations per iteration instead of 10,000.
    for (workload, pending, operations, iterations) in [
        (Workload.pending1K, 1_000, 10_000, 200), (Workload.pending1M, 1_000_000, 100, 20)
    ] {
        let holder = Holder<PendingTimers>()
        Benchmark(
            Workload.name(workload, operations),
            configuration: benchConfiguration(iterations: iterations, seconds: 2)
        ) { benchmark in
            let l = holder.state!.l, loop = l.loop
            let probe = NIODeadline.now() + .nanoseconds(Int64(probeDeadlineOffset))
            l.runAndWait {
                for _ in 0..<operations {
                    loop.scheduleTask(deadline: probe) {}.cancel()
                }
                bs_sem_post(l.done)
            }
        } setup: {
            holder.state = PendingTimers(count: pending)
        } teardown: {
            holder.state?.tearDown()
            holder.state = nil
        }
    }
}

// MARK: 2. custom source: `execute` from the loop's own thread

private final class ExecuteChain: @unchecked Sendable {
    let l: Loop
    var count = 0
    var target = 0
    var step: (@Sendable () -> Void)?

    init(_ l: Loop) {
        self.l = l
        step = { [unowned self] in
            count += 1
            if count < target { l.loop.execute(step!) } else { bs_sem_post(l.done) }
        }
    }
}

private func sourceBenchmarks() {
    let performs = Workload.source0Count
    let holder = Holder<ExecuteChain>()
    Benchmark(Workload.name(Workload.source0, performs), configuration: benchConfiguration(iterations: 40)) { benchmark in
        let chain = holder.state!
        chain.count = 0
        chain.target = performs
        chain.l.runAndWait(chain.step!)
        precondition(chain.count == performs)
    } setup: {
        holder.state = ExecuteChain(Loop())
    } teardown: {
        holder.state?.step = nil
        holder.state?.l.shutdown()
        holder.state = nil
    }
}

// MARK: 3. cross-thread hand-off: `execute` from the benchmark thread

private func crossThreadBenchmarks() {
    let holder = Holder<Loop>()
    let post = Holder<@Sendable () -> Void>()
    Benchmark(
        Workload.name(Workload.crossPerform, 1),
        configuration: benchConfiguration(iterations: 20_000, seconds: 2, warmup: 200)
    ) { benchmark in
        let l = holder.state!
        l.loop.execute(post.state!)
        bs_sem_wait(l.done)
    } setup: {
        let l = Loop()
        holder.state = l
        post.state = { bs_sem_post(l.done) }
    } teardown: {
        holder.state?.shutdown()
        holder.state = nil
        post.state = nil
    }
}

// MARK: 4. fd ping-pong over two channels

private final class PingPongState: @unchecked Sendable {
    let l = Loop()
    let counter = Counter()
    var fds: [Int32] = [-1, -1]
    var a: Channel!
    var b: Channel!

    init() throws {
        guard bs_socketpair(&fds) == 0 else { fatalError("socketpair failed") }
        a = try channel(fds[0], isA: true)
        b = try channel(fds[1], isA: false)
    }

    private func channel(_ fd: Int32, isA: Bool) throws -> Channel {
        try ClientBootstrap(group: l.group)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(PingPongHandler(state: self, isA: isA))
                }
            }
            .withConnectedSocket(fd)
            .wait()
    }

    func runOnce(_ roundTrips: Int) {
        let a = self.a!
        counter.value = 0
        counter.target = roundTrips
        l.runAndWait {
            var byte = a.allocator.buffer(capacity: 1)
            byte.writeInteger(UInt8(0x78))
            a.writeAndFlush(byte, promise: nil)
        }
        precondition(counter.value == roundTrips)
    }

    func tearDown() {
        try? a.close().wait()
        try? b.close().wait()
        l.shutdown()
    }
}

private final class PingPongHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let state: PingPongState
    let isA: Bool

    init(state: PingPongState, isA: Bool) {
        self.state = state
        self.isA = isA
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let byte = unwrapInboundIn(data)
        if isA {
            let counter = state.counter
            counter.value += 1
            if counter.value >= counter.target {
                bs_sem_post(state.l.done)
                return
            }
        }
        context.writeAndFlush(wrapOutboundOut(byte), promise: nil)
    }
}

private func pingPongBenchmarks() {
    let roundTrips = Workload.pingPongCount
    let holder = Holder<PingPongState>()
    Benchmark(Workload.name(Workload.pingPong, roundTrips), configuration: benchConfiguration(iterations: 40, seconds: 2)) { benchmark in
        holder.state!.runOnce(roundTrips)
    } setup: {
        holder.state = try PingPongState()
    } teardown: {
        holder.state?.tearDown()
        holder.state = nil
    }
}

// MARK: 6. memory per pending timer (NIO has no custom or port sources to compare)

private func memoryBenchmarks() {
    let timerCount = Workload.memTimerCount
    Benchmark(
        Workload.name(Workload.memTimers, timerCount),
        configuration: benchConfiguration(iterations: 10, seconds: 2, memory: true)
    ) { benchmark in
        // A fresh loop per iteration (outside the measurement): its timer heap starts empty.
        let l = Loop()
        let loop = l.loop
        let holder = Holder<[Scheduled<Void>]>()
        holder.state = []
        holder.state!.reserveCapacity(timerCount)
        let now = NIODeadline.now()
        l.runAndWait { bs_sem_post(l.done) }
        benchmark.startMeasurement()
        l.runAndWait {
            for index in 0..<timerCount {
                holder.state!.append(loop.scheduleTask(deadline: now + .nanoseconds(Int64(farDeadlineOffset(index, of: timerCount)))) {})
            }
            bs_sem_post(l.done)
        }
        benchmark.stopMeasurement()
        l.shutdown()  // fails the pending tasks in one pass
        holder.state = nil
    }
}

// MARK: 7. TCP echo

/// A ServerBootstrap echo server on 127.0.0.1 port 0 and `tcpEchoConnections` ClientBootstrap clients,
/// all on the one loop (TCP_NODELAY on both ends, as RunLoopNet's default and the libevent baseline).
private final class TCPEchoState: @unchecked Sendable {
    let l = Loop()
    var server: Channel!
    var clients: [Channel] = []
    var message: ByteBuffer!
    var remaining = 0  // round trips still to start (all clients together)
    var echoed = 0
    var target = 0

    init() throws {
        message = ByteBuffer(repeating: 0x78, count: Workload.tcpEchoMessageSize)
        server = try ServerBootstrap(group: l.group)
            .serverChannelOption(.backlog, value: 511)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(EchoServerHandler())
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait()
        let port = server.localAddress!.port!
        for _ in 0..<Workload.tcpEchoConnections {
            clients.append(
                try ClientBootstrap(group: l.group)
                    .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                    .channelInitializer { [self] channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(EchoClientHandler(state: self))
                        }
                    }
                    .connect(host: "127.0.0.1", port: port)
                    .wait())
        }
    }

    func runOnce(_ roundTripsPerClient: Int) {
        let clients = self.clients, message = self.message!
        echoed = 0
        target = clients.count * roundTripsPerClient
        remaining = target - clients.count
        l.runAndWait {
            for client in clients { client.writeAndFlush(message, promise: nil) }
        }
        precondition(echoed == target)
    }

    func tearDown() {
        for client in clients { try? client.close().wait() }
        try? server.close().wait()
        l.shutdown()
    }
}

private final class EchoServerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }
}

private final class EchoClientHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let state: TCPEchoState
    var pending = 0  // bytes of the current echo received so far

    init(state: TCPEchoState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        pending += unwrapInboundIn(data).readableBytes
        let size = Workload.tcpEchoMessageSize
        while pending >= size {
            pending -= size
            state.echoed += 1
            if state.echoed == state.target {
                bs_sem_post(state.l.done)
                return
            }
            if state.remaining > 0 {
                state.remaining -= 1
                context.writeAndFlush(wrapOutboundOut(state.message), promise: nil)
            }
        }
    }
}

private func tcpEchoBenchmarks() {
    let roundTrips = Workload.tcpEchoRoundTrips
    let messages = Workload.tcpEchoConnections * roundTrips
    let holder = Holder<TCPEchoState>()
    Benchmark(Workload.name(Workload.tcpEcho, messages), configuration: benchConfiguration(iterations: 20, seconds: 2)) { benchmark in
        holder.state!.runOnce(roundTrips)
    } setup: {
        holder.state = try TCPEchoState()
    } teardown: {
        holder.state?.tearDown()
        holder.state = nil
    }
}
