import ChatNodeKit
import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

/// A node that says little, over memory links: LOGIN_ACK with small limits (and a DELIVER holding a
/// NUL), every SEND refused as too large, HEARTBEAT, ABANDON and LOGOUT answered. It counts the SENDs
/// it receives.
private final class SmallLimitNode {
    private(set) var sends: [IMChatMessage] = []
    private let maxSendBody: UInt32
    private(set) lazy var links = MemoryLinkConnector { [weak self] link in self?.serve(link) }

    init(maxSendBody: UInt32) {
        self.maxSendBody = maxSendBody
    }

    private func serve(_ link: MemoryFrameLink) {
        link.open(
            IMFrameLinkEvents(
                received: { [weak self, unowned link] frame in self?.answer(frame, on: link) },
                failed: { _, _ in }, closed: { _ in }))
    }

    private func answer(_ frame: IMFrame, on link: MemoryFrameLink) {
        var reply: [IMFrame] = []
        switch frame.command {
        case .login:
            var response = IMLoginResponse()
            response.limits.maxSendBody = maxSendBody
            response.limits.maxFrameBody = maxSendBody + 128
            var hostile = IMChatMessage()
            hostile.id = "nul-1"
            hostile.from = "mallory"
            hostile.user = "alice"
            hostile.seq = 1
            hostile.text = "before\u{0}after\u{7}"
            reply = [
                IMFrame(command: .loginAck, serial: frame.serial, message: response),
                IMFrame(command: .deliver, serial: 1, message: hostile)
            ]
        case .send:
            guard let message = try? frame.decode(IMChatMessage.self) else { return }
            sends.append(message)
            var ack = IMSendAck()
            ack.id = message.id
            reply = [IMFrame(command: .sendAck, serial: frame.serial, code: .frameTooLarge, message: ack)]
        case .heartbeat:
            reply = [IMFrame(command: .heartbeatAck, serial: frame.serial)]
        case .abandon:
            var response = IMAbandonResponse()
            response.results = ((try? frame.decode(IMAbandonRequest.self))?.ids ?? []).map {
                var result = IMAbandonResult()
                result.id = $0
                return result
            }
            reply = [IMFrame(command: .abandonAck, serial: frame.serial, message: response)]
        case .logout:
            reply = [IMFrame(command: .logoutAck, serial: frame.serial)]
        default:
            return
        }
        try? link.send(reply)
    }
}

@Suite("Terminal client: the node's limits (memory links, manual clock)")
struct TerminalClientLimitsTests {
    @Test("control characters are shown escaped, NUL as \\0, and the text after them is kept")
    func escapes() {
        #expect(TerminalClient.visible("a\u{0}b\u{1B}[2J\tc\r\u{7F}\u{85}\u{1}é") == #"a\0b\e[2J\tc\r\x7F\u{85}\x01é"#)
        #expect(TerminalClient.visible("plain text") == "plain text")
    }

    @Test(
        "over the node's limit: a message queued before login fails as too large, a typed one is refused with the limit, one the node refuses is never resent; NUL shown escaped"
    )
    func tooLarge() async throws {
        try await onManualClockLoop { loop, _ in
            let node = SmallLimitNode(maxSendBody: 1_000)
            let seen = Transcript()
            var configuration = terminalConfiguration("alice")
            configuration.followsReachability = false
            let alice = TerminalClient(configuration: configuration, connector: node.links.connector, loop: loop) { seen.lines.append($0) }
            let big = String(repeating: "x", count: 2_000)
            type("/msg bob \(big)", into: alice)  // queued before the node announced its limit
            alice.start()
            try #require(try loop.runUntil(timeout: .seconds(60)) { seen.contains("→ m1 failed") }, "\(seen.dump)")
            #expect(seen.contains("→ m1 failed: too large (2"), "\(seen.dump)")
            #expect(seen.contains("bytes; the limit is 1000 bytes)"), "\(seen.dump)")
            #expect(seen.contains("[@mallory] mallory: before\\0after\\x07"), "\(seen.dump)")

            type("/msg bob \(big)", into: alice)
            try #require(try loop.runUntil(timeout: .seconds(60)) { seen.contains("! m2 not sent") }, "\(seen.dump)")
            #expect(
                seen.lines.contains { $0.hasPrefix("! m2 not sent: message too large (") && $0.hasSuffix("the limit is 1000 bytes)") },
                "\(seen.dump)")

            type("/msg bob fits, but the node says no", into: alice)
            try #require(try loop.runUntil(timeout: .seconds(60)) { seen.contains("→ m3 failed") }, "\(seen.dump)")
            #expect(seen.contains("→ m3 failed: too large ("), "\(seen.dump)")
            alice.endOfInput()
            try #require(try loop.runUntil(timeout: .seconds(60)) { alice.exitStatus != nil })
            #expect(alice.exitStatus == 1)
            #expect(node.sends.map(\.text) == ["fits, but the node says no"], "only m3 was ever written, once")
        }
    }

    @Test("a login refused for now (the user has too many sessions) is retried, never ends the session; it gets in once a session leaves")
    func temporaryRefusal() async throws {
        try await onManualClockLoop { loop, clock in
            var settings = IMServer.Settings()
            settings.maximumSessionsPerUser = 1
            let node = MemoryChatNode(loop: loop, clock: clock, settings: settings)
            let first = node.client("alice")
            first.start()
            try #require(try node.runUntil { first.state == .online })
            let seen = Transcript()
            let alice = node.terminal("alice", into: seen)
            alice.start()
            try #require(try node.runUntil { seen.count("* reconnecting in ") >= 2 }, "\(seen.dump)")
            #expect(seen.contains("* disconnected: login refused (too many connections)"), "\(seen.dump)")
            #expect(alice.exitStatus == nil && !seen.contains("* closed"), "\(seen.dump)")
            first.close()
            try #require(try node.runUntil { seen.contains("* connected") }, "\(seen.dump)")
            alice.endOfInput()
            try #require(try node.runUntil { alice.exitStatus != nil })
            #expect(alice.exitStatus == 0, "\(seen.dump)")
        }
    }

    @Test(
        "rate limited: one line per pause, nothing shown twice, every message stored and received in order",
        .disabled(if: isRunningUnderThreadSanitizer, "a volume test of one loop: run in the plain pass"))
    func rateLimited() async throws {
        try await onManualClockLoop { loop, clock in
            var settings = IMServer.Settings()
            settings.session.maximumMessagesPerSecond = 100
            settings.session.messageBurst = 5
            let node = MemoryChatNode(loop: loop, clock: clock, settings: settings)
            let bob = node.client("bob")
            var received: [String] = []
            bob.onMessage = { _, message in received.append(message.text) }
            bob.start()
            try #require(try node.runUntil { bob.state == .online })
            let seen = Transcript()
            let alice = node.terminal("alice", into: seen)
            alice.start()
            try #require(try node.runUntil { seen.contains("* connected") })
            let texts = (1...40).map { "burst \($0)" }
            for text in texts { type("/msg bob \(text)", into: alice) }
            alice.endOfInput()
            try #require(try node.runUntil(timeout: .seconds(20)) { alice.exitStatus != nil }, "\(seen.dump)")
            #expect(alice.exitStatus == 0, "\(seen.dump)")
            let pauses = seen.lines(startingWith: "* rate limited, retrying in ")
            #expect(!pauses.isEmpty, "\(seen.dump)")
            #expect(pauses.allSatisfy { $0.hasSuffix(" s") }, "\(pauses)")
            for number in 1...40 {
                let lines = seen.lines(startingWith: "→ m\(number) ")
                #expect(lines.count == 3 && lines[1] == "→ m\(number) sent", "\(lines)")
            }
            try #require(try node.runUntil { received.count >= 40 }, "\(received.count)")
            #expect(received == texts)
            bob.close()
        }
    }
}
