// 8. WebSocket echo on SwiftNIO's NIOWebSocket: tcp.echo's shape (100 connections on the one loop, one
// 64-byte message in flight each) upgraded through NIOHTTP1 as a user would: the server pipeline from
// `configureHTTPServerPipeline(withServerUpgrade:)`, the client from `addHTTPClientHandlers(withClientUpgrade:)`.
// After the upgrade each side holds WebSocketFrameDecoder/Encoder and our handler. The client masks
// every frame with a fresh key, as RunLoopWebSocket's client and RFC 6455 do; the server echoes the
// unmasked payload in one frame. NIO hands over frames, not messages: with every message in one
// frame (as here) that is the same work our assembler does.
import BenchCommon
import Benchmark
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

private final class WebSocketEchoState: @unchecked Sendable {
    let l = Loop()
    var server: Channel!
    var clients: [Channel] = []
    let payload = ByteBuffer(repeating: 0x78, count: Workload.tcpEchoMessageSize)
    var upgraded = 0  // clients whose upgrade completed (touched on the loop only)
    var remaining = 0  // round trips still to start (all clients together)
    var echoed = 0
    var target = 0

    init() throws {
        let upgrader = NIOWebSocketServerUpgrader(
            shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(WebSocketEchoServerHandler())
                }
            }
        )
        server = try ServerBootstrap(group: l.group)
            .serverChannelOption(.backlog, value: 511)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(
                    withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in })
                )
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait()
        let port = server.localAddress!.port!
        for _ in 0..<Workload.tcpEchoConnections {
            clients.append(
                try ClientBootstrap(group: l.group)
                    .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                    .channelInitializer { [self] channel in
                        let upgrader = NIOWebSocketClientUpgrader(upgradePipelineHandler: { [self] channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(WebSocketEchoClientHandler(state: self))
                            }
                        })
                        return channel.pipeline.addHTTPClientHandlers(
                            withClientUpgrade: (
                                upgraders: [upgrader],
                                completionHandler: { context in
                                    context.pipeline.removeHandler(name: UpgradeRequestHandler.name, promise: nil)
                                }
                            )
                        ).flatMapThrowing {
                            try channel.pipeline.syncOperations.addHandler(
                                UpgradeRequestHandler(port: port), name: UpgradeRequestHandler.name)
                        }
                    }
                    .connect(host: "127.0.0.1", port: port)
                    .wait())
        }
        // Connected is not upgraded: wait until every client's handler is in its pipeline.
        l.runAndWait { [self] in waitForUpgrades() }
    }

    private func waitForUpgrades() {
        if upgraded == clients.count { return bs_sem_post(l.done) }
        l.loop.scheduleTask(in: .milliseconds(1)) { [self] in waitForUpgrades() }
    }

    func frame() -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .binary, maskKey: .random(), data: payload)
    }

    func runOnce(_ roundTripsPerClient: Int) {
        let clients = self.clients
        echoed = 0
        target = clients.count * roundTripsPerClient
        remaining = target - clients.count
        l.runAndWait { [self] in
            for client in clients { client.writeAndFlush(frame(), promise: nil) }
        }
        precondition(echoed == target)
    }

    func tearDown() {
        for client in clients { try? client.close().wait() }
        try? server.close().wait()
        l.shutdown()
    }
}

/// Sends the HTTP GET the client upgrader turns into the upgrade request, once connected.
private final class UpgradeRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart
    static let name = "upgrade-request"
    let port: Int

    init(port: Int) { self.port = port }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "127.0.0.1:\(port)")
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/echo", headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }
}

private final class WebSocketEchoServerHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .binary, .text:
            let echo = WebSocketFrame(fin: true, opcode: frame.opcode, data: frame.unmaskedData)
            context.write(wrapOutboundOut(echo), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }
}

private final class WebSocketEchoClientHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame
    let state: WebSocketEchoState

    init(state: WebSocketEchoState) { self.state = state }

    func handlerAdded(context: ChannelHandlerContext) {
        state.upgraded += 1
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard unwrapInboundIn(data).opcode == .binary else { return }
        state.echoed += 1
        if state.echoed == state.target {
            bs_sem_post(state.l.done)
            return
        }
        if state.remaining > 0 {
            state.remaining -= 1
            context.writeAndFlush(wrapOutboundOut(state.frame()), promise: nil)
        }
    }
}

func webSocketEchoBenchmarks() {
    let roundTrips = Workload.tcpEchoRoundTrips
    let messages = Workload.tcpEchoConnections * roundTrips
    let holder = Holder<WebSocketEchoState>()
    Benchmark(Workload.name(Workload.wsEcho, messages), configuration: benchConfiguration(iterations: 20, seconds: 2)) { benchmark in
        holder.state!.runOnce(roundTrips)
    } setup: {
        holder.state = try WebSocketEchoState()
    } teardown: {
        holder.state?.tearDown()
        holder.state = nil
    }
}
