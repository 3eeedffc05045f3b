import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// A session link that is only what a test makes it: frames in by hand, and sends that fail once the
/// connection is "gone" — as a WebSocket whose close handshake started, or a TCP stream being closed,
/// refuses writes before it reports itself closed. Loop thread only.
private final class VanishingLink: IMFrameLink {
    let loop = RunLoop.current
    var modes: [RunLoop.Mode] { [.common] }
    var remoteAddress: SocketAddress? { nil }
    var events: IMFrameLinkEvents?
    var isGone = false
    var sent: [IMFrame] = []

    func open(_ events: IMFrameLinkEvents) { self.events = events }
    func send(_ frame: IMFrame) throws(IMLinkFailure) {
        if isGone { throw .outputClosed }
        sent.append(frame)
    }
    func close(for reason: IMSessionEndReason?) { isGone = true }
    func abort() { isGone = true }
    func raiseInboundLimit(to bodyLength: Int) {}
}

/// Verdicts the test hands out by hand (loop thread only).
private final class HeldVerdicts {
    var waiting: [(IMLoginVerdict) -> Void] = []
}

@Suite("IM server: a link lost while the login is decided")
struct LostLinkLoginTests {
    @Test(
        "a login accepted after the link stopped taking writes ends the session (the LOGIN_ACK cannot go out) and brings no one online; the user's next session logs in"
    )
    func acceptedLoginOnAGoneLink() async throws {
        try await onLoopThread { try Self.onLoop() }
    }

    private static func onLoop() throws {
        var settings = IMServer.Settings()
        settings.maximumSessionsPerUser = 1
        let server = IMServer(store: InMemoryIMStore(), settings: settings)
        let held = HeldVerdicts()
        server.authenticator = { _, verdict in held.waiting.append(verdict) }
        var request = IMLoginRequest()
        request.user = "ann"
        request.password = "pw"
        let login = IMFrame(command: .login, serial: 1, message: request)

        let ghost = VanishingLink()
        server.adopt(ghost)
        ghost.events?.received(login)
        #expect(held.waiting.count == 1)
        ghost.isGone = true
        held.waiting.removeFirst()(.accepted)
        #expect(server.sessions.isEmpty, "the session ended when its LOGIN_ACK could not be written")
        #expect(server.onlineUsers.isEmpty, "ann is online with no connection")

        let real = VanishingLink()
        server.adopt(real)
        real.events?.received(login)
        try #require(held.waiting.count == 1, "refused before the check: \(real.sent)")
        held.waiting.removeFirst()(.accepted)
        #expect(real.sent.first?.command == .loginAck && real.sent.first?.code == .ok, "\(real.sent)")
        #expect(server.onlineUsers == ["ann"] && server.sessions.count == 1)
        server.abort()
    }
}
