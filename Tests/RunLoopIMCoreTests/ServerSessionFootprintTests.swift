import RunLoopKit
import Testing

@testable import RunLoopIMCore

/// Issue 22: what a server session's machine and delivery window keep per idle connection — no copy
/// of what the server's settings already say (the late grace, the SEND rate, the keepalive bounds),
/// the user once — and that what they answer is the same as when each kept its own.
@Suite("Server session footprint")
struct ServerSessionFootprintTests {
    let start = LoopInstant(nanoseconds: 1_000_000_000)

    func loggedIn(announcing keepaliveSeconds: UInt32, settings: IMServerSessionMachine.Settings = .init()) -> IMServerSessionMachine {
        .loggedIn(at: start, announcing: keepaliveSeconds, settings: settings)
    }

    @Test("the silence limit is 1.5 × the announced keepalive, within the settings' bounds; the longest for none")
    func silenceLimitFollowsTheKeepalive() {
        var settings = IMServerSessionMachine.Settings()
        settings.minimumKeepalive = .seconds(5)
        settings.maximumKeepalive = .seconds(60)
        #expect(loggedIn(announcing: 20, settings: settings).silenceLimit == .seconds(30))
        #expect(loggedIn(announcing: 2, settings: settings).silenceLimit == .milliseconds(7_500))
        #expect(loggedIn(announcing: 600, settings: settings).silenceLimit == .seconds(90))
        #expect(loggedIn(announcing: 0, settings: settings).silenceLimit == .seconds(90))
        let machine = loggedIn(announcing: 20, settings: settings)
        #expect(machine.nextDeadline == start + .seconds(30))
        #expect(IMServerSessionMachine(settings: settings, now: start).silenceLimit == nil)
    }

    @Test("LOGIN_ACK announces the keepalive honoured, as before")
    func loginAckAnnouncesTheKeepaliveHonoured() throws {
        var settings = IMServerSessionMachine.Settings()
        settings.minimumKeepalive = .seconds(5)
        var machine = IMServerSessionMachine(settings: settings, now: start)
        var login = IMLoginRequest()
        login.user = "ann"
        login.keepaliveSeconds = 2
        _ = machine.frameReceived(IMFrame(command: .login, serial: 1, message: login), now: start)
        let actions = machine.loginAccepted(user: "ann", sessionID: "s", serverTimeMilliseconds: 0, now: start)
        guard case .write(let ack) = actions.first else {
            Issue.record("no LOGIN_ACK: \(actions)")
            return
        }
        #expect(try ack.decode(IMLoginResponse.self).keepaliveSeconds == 5)
    }

    @Test("the user is the machine's while online, and kept for the session's last reports once it ended")
    func userKeptPastTheEnd() {
        var machine = loggedIn(announcing: 10)
        #expect(machine.user == "ann" && machine.loggedInUser == "ann")
        _ = machine.transportClosed("gone")
        #expect(machine.isEnded)
        #expect(machine.user == nil && machine.silenceLimit == nil)
        #expect(machine.loggedInUser == "ann")
        #expect(IMServerSessionMachine(settings: .init(), now: start).loggedInUser == nil)
    }

    @Test("LOGIN's keepalive and its presence_batches share a word: each read back as sent, the keepalive clamped only past 2³¹ − 1 s")
    func keepaliveAndPresenceBatches() throws {
        var settings = IMServerSessionMachine.Settings()
        settings.maximumKeepalive = .seconds(60)
        for (keepalive, batches) in [(UInt32(20), true), (20, false), (0, true), (.max, false), (.max, true)] {
            var machine = IMServerSessionMachine(settings: settings, now: start)
            var login = IMLoginRequest()
            login.user = "ann"
            login.keepaliveSeconds = keepalive
            login.presenceBatches = batches
            _ = machine.frameReceived(IMFrame(command: .login, serial: 1, message: login), now: start)
            #expect(machine.sendsPresenceBatches == batches)
            #expect(machine.announcedKeepaliveSeconds == min(keepalive, 0x7FFF_FFFF))
            let actions = machine.loginAccepted(user: "ann", sessionID: "s", serverTimeMilliseconds: 0, now: start)
            guard case .write(let ack) = actions.first else {
                Issue.record("no LOGIN_ACK: \(actions)")
                return
            }
            let response = try ack.decode(IMLoginResponse.self)
            #expect(response.presenceBatches == batches)
            #expect(response.keepaliveSeconds == (keepalive == 0 || keepalive > 60 ? 60 : keepalive))
        }
    }

    @Test("a session's machine and window are the sizes issue 22 cut them to")
    func sizes() {
        // 101 (120 before): the optional deadline and grant in 8 and 16 bytes (OptionalInstant), the phase last.
        #expect(MemoryLayout<IMServerSessionMachine>.size <= 101)
        #expect(MemoryLayout<OptionalInstant>.size == 8)
        #expect(MemoryLayout<DeliveryWindow>.size <= 35)
        #expect(MemoryLayout<TokenBucket>.size == 16)
        #expect(MemoryLayout<IMServerSessionMachine.RefusedSend?>.size == 8)
    }
}
