// 8. WebSocket echo on RunLoopWebSocket: tcp.echo's shape (100 connections on the benchmark thread's loop,
// one 64-byte message in flight each) with RFC 6455 framing: the client masks every frame with a fresh
// key, the server unmasks, assembles the message and sends it back unmasked.
import BenchCommon
import Benchmark
import RunLoopKit
import RunLoopWebSocket

private final class WebSocketEcho: @unchecked Sendable {
    let loop: RunLoop
    let mode = RunLoop.Mode("bench.ws.echo")
    let server: WebSocketServer
    var clients: [WebSocketConnection] = []
    var accepted: [WebSocketConnection] = []
    let message = WebSocketMessage.binary([UInt8](repeating: 0x78, count: Workload.tcpEchoMessageSize))
    var opened = 0
    var remaining = 0  // round trips still to start, per iteration (all clients together)
    var echoed = 0
    var target = 0

    init() throws {
        loop = RunLoop.current
        server = WebSocketServer(loop: loop, modes: [mode])
        server.onConnection = { [unowned self] _, connection in
            connection.onMessage = { c, message in try? c.send(message) }
            accepted.append(connection)
            if everyoneIsIn { loop.stop() }
        }
        try server.listen()
        for _ in 0..<Workload.tcpEchoConnections {
            let client = WebSocketConnection(loop: loop, modes: [mode])
            client.onOpen = { [unowned self] _ in
                opened += 1
                if everyoneIsIn { loop.stop() }
            }
            client.onMessage = { [unowned self] c, _ in echoed(c) }
            client.onClose = { _, info in fatalError("ws.echo client closed: \(info)") }
            client.connect(host: "127.0.0.1", port: server.port, target: "/echo")
            clients.append(client)
        }
        _ = try loop.run(mode)
        precondition(everyoneIsIn)
    }

    private var everyoneIsIn: Bool {
        opened == Workload.tcpEchoConnections && accepted.count == Workload.tcpEchoConnections
    }

    private func echoed(_ connection: WebSocketConnection) {
        echoed += 1
        if echoed == target { loop.stop(); return }
        if remaining > 0 { remaining -= 1; try! connection.send(message) }
    }

    func runOnce(_ roundTripsPerClient: Int) {
        echoed = 0
        target = clients.count * roundTripsPerClient
        remaining = target - clients.count
        for client in clients { try! client.send(message) }
        _ = try! loop.run(mode)
        precondition(echoed == target)
    }

    func tearDown() {
        // Connections are confined to their loop's thread; off it, the process is about to exit anyway.
        guard loop.isCurrentThread else { return }
        for client in clients { client.onClose = nil; client.abort() }
        for connection in accepted { connection.abort() }
        server.close()
        clients = []
        accepted = []
    }
}

extension WebSocketEcho: LoopBoundState {}

func webSocketEchoBenchmarks() {
    let roundTrips = Workload.tcpEchoRoundTrips
    let messages = Workload.tcpEchoConnections * roundTrips
    let holder = Holder<WebSocketEcho>()
    Benchmark(Workload.name(Workload.wsEcho, messages), configuration: benchConfiguration(iterations: 20, seconds: 2)) { benchmark in
        let state = holder.state(for: RunLoop.current) { try! WebSocketEcho() }
        benchmark.startMeasurement()
        state.runOnce(roundTrips)
        benchmark.stopMeasurement()
    } teardown: {
        holder.state?.tearDown()
        holder.state = nil
    }
}
