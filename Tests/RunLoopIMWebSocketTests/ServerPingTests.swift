import RunLoopIM
import RunLoopIMCore
import RunLoopIMWebSocket
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A peer that completes the upgrade by hand and then never reads again: it cannot answer pings.
final class DeafPeer {
    let tcp = TCPConnection()
    var upgraded = false

    init(port: UInt16) {
        let key = WebSocketHandshake.randomKey()
        tcp.onConnect = { tcp in try? tcp.write(WebSocketHandshake.request(host: "127.0.0.1", port: port, target: "/ws", key: key)) }
        tcp.read(upTo: [13, 10, 13, 10], maximumLength: 4096, timeout: .seconds(5)) { [weak self] _, _ in self?.upgraded = true }
        tcp.connect(to: "127.0.0.1", port: port)
    }
}

@Suite("IM over WebSocket: server pings")
struct ServerPingTests {
    @Test(
        "the server pings each WebSocket session: a peer that answers stays, one that cannot is dropped after two intervals, long before the login timeout"
    )
    func pingsDropDeadPeers() async throws {
        try await onLoopThread { try Self.pingsOnLoop() }
    }

    static func pingsOnLoop() throws {
        let loop = RunLoop.current
        let server = IMServer(store: InMemoryIMStore())
        let web = WebSocketServer()
        web.onConnection = { [server] _, connection in server.adopt(connection, pingInterval: .milliseconds(100)) }
        try web.listen()
        defer {
            web.close()
            server.abort()
        }
        let answering = WebSocketConnection()
        answering.connect(host: "127.0.0.1", port: web.port, target: "/ws")
        let deaf = DeafPeer(port: web.port)
        try #require(try spin(loop) { deaf.upgraded && answering.state == .open && server.sessions.count == 2 })
        let answeringLink = try #require(
            server.sessions.compactMap { $0.link as? WebSocketFrameLink }.first { $0.remoteAddress?.port == answering.tcp.localAddress?.port })
        let start = loop.now
        try #require(try spin(loop) { server.sessions.count == 1 }, "the deaf peer was not dropped")
        #expect(loop.now - start < .seconds(2), "dropped by the pings, not by the 10 s login timeout")
        #expect(server.sessions.first?.link === answeringLink)
        let until = loop.now + .milliseconds(400)
        try spin(loop) { loop.now >= until }
        #expect(server.sessions.count == 1 && answering.state == .open, "a peer that answers pings stays")
        answering.close()
    }
}

/// What the two loop threads of the stalled-server test share.
private final class StallShared: Sendable {
    let port = Atomic<Int>(0)
    let done = Atomic<Bool>(false)
}

/// Counts the stalls (loop thread only).
private final class StallCount {
    var armed = false
    var value = 0
    var endedAt: LoopInstant?
}

@Suite("IM over WebSocket: a stalled server loop")
struct StalledServerPingTests {
    @Test("a server loop stalled past its next ping, with the pong waiting unread, keeps the peer: the loop was late, not the peer silent")
    func stalledLoopKeepsAnsweringPeer() async throws {
        let shared = StallShared()
        // The answering peer on a loop of its own, so it answers while the server's loop is stalled.
        let serve: @Sendable () throws -> (Int, Int) = { try Self.serveAndStall(shared) }
        let answer: @Sendable () throws -> (Int, Int) = {
            try Self.answer(shared); return (0, 0)
        }
        let outcomes = try await onLoopThreads([serve, answer])
        let (stalls, sessions) = outcomes[0]
        #expect(stalls == 1)
        #expect(sessions == 1, "the answering peer was dropped by a ping the stalled loop judged before reading the pong")
    }

    private static func answer(_ shared: StallShared) throws {
        let loop = RunLoop.current
        _ = try spin(loop, for: .seconds(30)) { shared.port.load(ordering: .acquiring) != 0 }
        let answering = WebSocketConnection()
        answering.connect(host: "127.0.0.1", port: UInt16(shared.port.load(ordering: .acquiring)), target: "/ws")
        _ = try spin(loop, for: .seconds(30)) { shared.done.load(ordering: .acquiring) }
        answering.abort()
    }

    private static func serveAndStall(_ shared: StallShared) throws -> (Int, Int) {
        defer { shared.done.store(true, ordering: .releasing) }
        let loop = RunLoop.current
        let server = IMServer(store: InMemoryIMStore())
        let web = WebSocketServer()
        web.onConnection = { [server] _, connection in server.adopt(connection, pingInterval: .milliseconds(200)) }
        try web.listen()
        defer {
            web.close()
            server.abort()
        }
        shared.port.store(Int(web.port), ordering: .releasing)
        try #require(try spin(loop, for: .seconds(30)) { server.sessions.count == 1 })
        let stalls = StallCount()
        // Once a ping went out (its next date already set), the next iteration starts with the loop
        // busy for over three intervals: the pong arrives meanwhile and waits in the kernel, and the
        // overdue ping timer fires before the port is read.
        let pinged = RunLoopCalloutObserver { callout in
            if callout.kind == .timer, callout.label == "im.websocket ping", callout.end != nil { stalls.armed = true }
        }
        let stall = RunLoopObserver(activities: .beforeTimers) { _, _ in
            guard stalls.armed, stalls.value == 0 else { return }
            stalls.value += 1
            usleep(700_000)
            stalls.endedAt = loop.now
        }
        loop.add(pinged)
        loop.add(stall, forMode: .common)
        defer {
            loop.remove(pinged)
            stall.invalidate()
        }
        // Judged right after the stall (the overdue ping's verdict), not over later pings: a peer
        // slowed down by a loaded machine may miss those, and that would be a drop for a real reason.
        _ = try spin(loop, for: .seconds(30)) { stalls.endedAt.map { loop.now >= $0 + .milliseconds(100) } ?? false }
        return (stalls.value, server.sessions.count)
    }
}
