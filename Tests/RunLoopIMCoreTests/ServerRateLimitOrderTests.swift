import RunLoopKit
import Testing

@testable import RunLoopIMCore

/// Issue 18 §6 on the server: after SEND_ACK `rateLimited` for X, no SEND the client wrote after X may
/// be stored before X, however the token bucket refills meanwhile.
@Suite("Rate limit keeps one sender's order (server)")
struct ServerRateLimitOrderTests {
    let start = LoopInstant(nanoseconds: 1_000_000_000)

    func onlineMachine() -> IMServerSessionMachine {
        var settings = IMServerSessionMachine.Settings()
        settings.maximumMessagesPerSecond = 10
        settings.messageBurst = 1
        var machine = IMServerSessionMachine(settings: settings, now: start)
        var login = IMLoginRequest()
        login.user = "ann"
        _ = machine.frameReceived(IMFrame(command: .login, serial: 1, message: login), now: start)
        _ = machine.loginAccepted(user: "ann", sessionID: "s", serverTimeMilliseconds: 0, now: start)
        return machine
    }

    /// The answer to a SEND of `id`: `.ok` when it goes to the application, else the SEND_ACK's code.
    func send(_ id: String, _ machine: inout IMServerSessionMachine, at instant: LoopInstant) -> IMStatusCode? {
        var message = IMChatMessage()
        message.id = id
        message.user = "bob"
        let actions = machine.frameReceived(IMFrame(command: .send, serial: 9, message: message), now: instant)
        for case .write(let frame) in actions where frame.command == .sendAck { return frame.code }
        return actions.contains { if case .request = $0 { return true } else { return false } } ? .ok : nil
    }

    @Test("a SEND written behind the refused one is refused even when a token is due; the refused one, sent again, is stored first")
    func laterSendsWaitForTheRefusedOne() {
        var machine = onlineMachine()
        #expect(send("m1", &machine, at: start) == .ok)
        #expect(send("m2", &machine, at: start) == .rateLimited)
        // 150 ms on a token is due, but m3 was written before the client heard m2 was refused.
        #expect(send("m3", &machine, at: start + .milliseconds(150)) == .rateLimited)
        #expect(send("m2", &machine, at: start + .milliseconds(200)) == .ok)
        #expect(send("m3", &machine, at: start + .milliseconds(300)) == .ok)
    }

    @Test("the hold is lifted when the client abandons the refused id, or after 30 s, so a client that drops it is not refused forever")
    func holdIsBounded() {
        var machine = onlineMachine()
        _ = send("m1", &machine, at: start)
        #expect(send("m2", &machine, at: start) == .rateLimited)
        var abandon = IMAbandonRequest()
        abandon.ids = ["m2"]
        _ = machine.frameReceived(IMFrame(command: .abandon, serial: 10, message: abandon), now: start + .milliseconds(150))
        #expect(send("m3", &machine, at: start + .milliseconds(200)) == .ok)

        #expect(send("m4", &machine, at: start + .milliseconds(200)) == .rateLimited)
        #expect(send("m5", &machine, at: start + .seconds(10)) == .rateLimited)
        #expect(send("m5", &machine, at: start + .seconds(31)) == .ok)
    }
}
