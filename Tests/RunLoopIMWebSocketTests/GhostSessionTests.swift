import RunLoopIM
import RunLoopIMCore
import RunLoopIMWebSocket
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// A WebSocket client written by hand on a raw TCP connection: it sends exactly the bytes a test
/// composes (a LOGIN and a close frame in one write) and keeps its end of TCP open after the server's
/// close frame and end of stream, the way a stalled or careless client can — so the server's close
/// handshake lingers until its close timeout.
final class LingeringPeer {
    let tcp = TCPConnection()
    private(set) var upgraded = false

    init(port: UInt16) {
        tcp.allowsHalfClosure = true
        let key = WebSocketHandshake.randomKey()
        tcp.onConnect = { tcp in try? tcp.write(WebSocketHandshake.request(host: "127.0.0.1", port: port, target: "/ws", key: key)) }
        tcp.read(upTo: [13, 10, 13, 10], maximumLength: 4096, timeout: .seconds(30)) { [weak self] tcp, _ in
            self?.upgraded = true
            // What the server says next is not the point; reading it keeps its output flowing.
            tcp.onData = { _, _ in }
        }
        tcp.connect(to: "127.0.0.1", port: port)
    }

    /// One masked WebSocket message carrying `frame`: its bytes, or its JSON envelope.
    static func message(_ frame: IMFrame, json: Bool) -> [UInt8] {
        let message =
            json
            ? WebSocketFrame(opcode: .text, payload: Array(IMJSONEnvelope.encode(frame).utf8))
            : WebSocketFrame(opcode: .binary, payload: frame.encoded())
        return message.encoded(maskingKey: WebSocketMask.randomKey())
    }

    /// A masked close frame, 1000.
    static var closeFrame: [UInt8] {
        WebSocketFrame(opcode: .close, payload: WebSocketMessageAssembler.closePayload(code: .normalClosure, reason: ""))
            .encoded(maskingKey: WebSocketMask.randomKey())
    }

    func send(_ bytes: [UInt8]) { try? tcp.write(bytes) }
}

/// A LOGIN frame for `user` (any password: the held authenticator decides).
func loginFrame(_ user: String, serial: UInt32 = 1) -> IMFrame {
    var request = IMLoginRequest()
    request.user = user
    request.password = "pw"
    request.keepaliveSeconds = 30
    return IMFrame(command: .login, serial: serial, message: request)
}

/// An IM server behind a WebSocket listener whose password checks wait until the test decides them
/// (a slow hash on a worker, made controllable), and whose close handshakes wait a minute for a peer
/// that keeps TCP open. Loop thread only.
final class HeldLoginServer {
    let im: IMServer
    let web: WebSocketServer
    /// Checks asked for and not decided yet.
    var pending: [(IMLoginAttempt, (IMLoginVerdict) -> Void)] = []
    /// While true, checks wait in ``pending``; otherwise they pass at once.
    var holdsChecks = true
    /// Every presence change the server reported.
    var presence: [String] = []
    /// For each session that ended: the state of its WebSocket connection at that moment.
    var connectionStatesAtEnd: [WebSocketConnection.State] = []

    init() throws {
        var settings = IMServer.Settings()
        settings.maximumSessionsPerUser = 4
        im = IMServer(store: InMemoryIMStore(), settings: settings)
        web = WebSocketServer(configuration: WebSocketConfiguration(closeTimeout: .seconds(60)))
        web.onConnection = { [im] _, connection in im.adopt(connection) }
        im.authenticator = { [weak self] request, verdict in
            guard let self, self.holdsChecks else { return verdict(.accepted) }
            self.pending.append((request, verdict))
        }
        im.onPresenceChange = { [weak self] _, user, online in self?.presence.append("\(user) \(online ? "online" : "offline")") }
        im.onSessionEnd = { [weak self] _, session, _ in
            if let link = session.link as? WebSocketFrameLink { self?.connectionStatesAtEnd.append(link.connection.state) }
        }
        try web.listen()
    }

    /// Sessions whose WebSocket is still open (not closing, not closed).
    var linksLeftOpen: Int {
        im.sessions.filter { ($0.link as? WebSocketFrameLink)?.connection.state == .open }.count
    }

    /// Accepts every check that waits.
    func acceptPending() {
        let waiting = pending
        pending = []
        for (_, verdict) in waiting { verdict(.accepted) }
    }

    func stop() {
        web.close()
        im.abort()
    }
}

@Suite("IM over WebSocket: a link lost during login")
struct GhostSessionTests {
    @Test(
        "a LOGIN followed at once by a close frame — binary or JSON — while the password check runs: the session ends when the close frame arrives, though the peer keeps TCP open and the close handshake goes on; so does a logged-in session"
    )
    func sessionEndsAtThePeersCloseFrame() async throws {
        try await onLoopThread { try Self.endsAtCloseFrameOnLoop() }
    }

    static func endsAtCloseFrameOnLoop() throws {
        let loop = RunLoop.current
        let server = try HeldLoginServer()
        defer { server.stop() }
        let binary = LingeringPeer(port: server.web.port)
        let json = LingeringPeer(port: server.web.port)
        let online = LingeringPeer(port: server.web.port)
        try #require(try spin(loop) { binary.upgraded && json.upgraded && online.upgraded && server.im.sessions.count == 3 })

        online.send(LingeringPeer.message(loginFrame("bo"), json: false))
        try #require(try spin(loop) { server.pending.count == 1 })
        server.acceptPending()
        try #require(try spin(loop) { server.im.onlineUsers == ["bo"] })

        binary.send(LingeringPeer.message(loginFrame("ann"), json: false) + LingeringPeer.closeFrame)
        json.send(LingeringPeer.message(loginFrame("ann"), json: true) + LingeringPeer.closeFrame)
        online.send(LingeringPeer.closeFrame)
        try #require(try spin(loop) { server.im.sessions.isEmpty }, "sessions left: \(server.im.sessions.count)")
        #expect(
            server.connectionStatesAtEnd == [.closing, .closing, .closing],
            "each session ended while its close handshake still waited for the peer, not when TCP ended")
        #expect(server.im.onlineUsers.isEmpty)
        #expect(server.presence == ["bo online", "bo offline"])
        #expect(server.pending.count == 2, "the two checks were still running when their sessions ended")
        server.acceptPending()
        #expect(server.im.onlineUsers.isEmpty && server.presence == ["bo online", "bo offline"], "a late verdict brings no one online")
    }

    /// How a ghost login's link goes away.
    enum Loss: CaseIterable {
        case endOfStreamWhileChecking, resetWhileChecking
        case closeFrameAtOnce, closeFrameAtOnceJSON, closeFrameWhileChecking, closeFrameWhileCheckingJSON

        var json: Bool { self == .closeFrameAtOnceJSON || self == .closeFrameWhileCheckingJSON }
    }

    @Test(
        "six logins whose link goes away before the password check ends (close frame at once or during the check, binary or JSON, end of stream, reset) leave no session and no one online; the user then logs in"
    )
    func lostLoginsLeaveNoGhosts() async throws {
        try await onLoopThread { try Self.noGhostsOnLoop() }
    }

    static func noGhostsOnLoop() throws {
        let loop = RunLoop.current
        let server = try HeldLoginServer()
        defer { server.stop() }
        // Losses that end TCP come first: they never made ghosts, so a server that makes them of the
        // close frames still meets each of the four below the per-user limit.
        for loss in Loss.allCases {
            let peer = LingeringPeer(port: server.web.port)
            try #require(try spin(loop) { peer.upgraded && server.im.sessions.count == 1 }, "\(loss)")
            let login = LingeringPeer.message(loginFrame("ann"), json: loss.json)
            switch loss {
            case .closeFrameAtOnce, .closeFrameAtOnceJSON:
                peer.send(login + LingeringPeer.closeFrame)
                try #require(try spin(loop) { server.pending.count == 1 }, "\(loss)")
            case .closeFrameWhileChecking, .closeFrameWhileCheckingJSON:
                peer.send(login)
                try #require(try spin(loop) { server.pending.count == 1 }, "\(loss)")
                peer.send(LingeringPeer.closeFrame)
            case .endOfStreamWhileChecking:
                peer.send(login)
                try #require(try spin(loop) { server.pending.count == 1 }, "\(loss)")
                peer.tcp.shutdownOutput()
            case .resetWhileChecking:
                peer.send(login)
                try #require(try spin(loop) { server.pending.count == 1 }, "\(loss)")
                peer.tcp.close(immediately: true)
            }
            // The verdict comes once the link is going or gone, as a slow hash's would.
            try #require(try spin(loop) { server.linksLeftOpen == 0 }, "\(loss)")
            server.acceptPending()
            try #require(try spin(loop) { server.im.sessions.isEmpty }, "\(loss): \(server.im.sessions.count) sessions")
            #expect(server.im.onlineUsers.isEmpty, "\(loss) left a ghost online")
        }
        #expect(server.presence.isEmpty, "no presence for logins that never completed: \(server.presence)")

        server.holdsChecks = false
        let ann = IMClient(
            configuration: configuration("ann"),
            connector: WebSocketFrameLink.connector(host: "127.0.0.1", port: server.web.port))
        ann.start()
        defer { ann.close() }
        try #require(try spin(loop) { ann.state == .online }, "the real user was refused: \(ann.state)")
        #expect(server.im.onlineUsers == ["ann"] && server.im.sessions.count == 1)
        #expect(server.presence == ["ann online"])
    }
}
