import RunLoopKit
import Testing

@testable import RunLoopIMCore

/// A deadline that passes while the peer's bytes wait unread was missed by a busy loop, not by a silent
/// peer (a stalled loop fires its timers before it reads): the verdict waits `lateAnswerGrace`.
@Suite("Late deadlines: a busy loop is not a silent peer")
struct LateDeadlineTests {
    @Test("client: an answer deadline passed with bytes unread waits a grace; the answer then keeps the connection")
    func clientAnswerArrivesInTheGrace() throws {
        var harness = ClientHarness()
        harness.goOnline()
        let stalled = harness.heartbeatAfterStall()
        let heartbeat = try #require(stalled)
        #expect(harness.disconnects.isEmpty)
        #expect(harness.machine.nextDeadline == harness.now + IMClientMachine.lateAnswerGrace)
        harness.receive(IMFrame(command: .heartbeatAck, serial: heartbeat.serial))
        harness.advance(by: .seconds(20))  // less than the heartbeat interval: nothing more is expected
        #expect(harness.disconnects.isEmpty)
        #expect(harness.machine.state == .online)
    }

    @Test("client: an answer deadline passed with bytes unread, then nothing whole arrives: dropped after the grace")
    func clientStillSilentAfterTheGrace() throws {
        var harness = ClientHarness()
        harness.goOnline()
        let stalled = harness.heartbeatAfterStall()
        _ = try #require(stalled)
        let judged = harness.now + IMClientMachine.lateAnswerGrace
        harness.now = judged
        harness.record(harness.machine.timerFired(now: harness.now, inputWaiting: false))
        #expect(harness.disconnects == [.answerTimeout(.seconds(5))])
    }

    @Test("client: the grace is given once until the next frame; bytes that keep waiting without a frame do not keep a silent link")
    func clientGraceOnce() throws {
        var harness = ClientHarness()
        harness.goOnline()
        let stalled = harness.heartbeatAfterStall()
        _ = try #require(stalled)
        harness.now = harness.now + IMClientMachine.lateAnswerGrace
        harness.record(harness.machine.timerFired(now: harness.now, inputWaiting: true))
        #expect(harness.disconnects == [.answerTimeout(.seconds(5))])
    }

    @Test("client: a login deadline passed with the answer unread waits the grace, and the login completes")
    func clientLoginDeadline() throws {
        var harness = ClientHarness { $0.loginTimeout = .seconds(3) }
        harness.record(harness.machine.start(now: harness.now))
        harness.record(harness.machine.transportOpened(generation: harness.generation, now: harness.now))
        let login = try #require(harness.lastWritten(.login))
        harness.now = harness.now + .seconds(4)  // stalled past the 3 s login timeout
        harness.record(harness.machine.timerFired(now: harness.now, inputWaiting: true))
        #expect(harness.machine.state == .loggingIn)
        harness.record(
            harness.machine.frameReceived(
                IMFrame(command: .loginAck, serial: login.serial, message: IMLoginResponse()), generation: harness.generation, now: harness.now))
        #expect(harness.machine.state == .online)
    }

    @Test("server: a keepalive deadline passed with the client's bytes unread waits a grace; a frame then keeps the session, silence ends it")
    func serverKeepalive() {
        var now = LoopInstant(nanoseconds: 1_000_000_000_000)
        var kept = Self.onlineSession(now: now)
        #expect(kept.silenceLimit == .seconds(15))
        now = now + .seconds(20)  // a loop stalled past the 15 s limit
        _ = kept.timerFired(now: now, inputWaiting: true)
        #expect(!kept.isEnded)
        #expect(kept.nextDeadline == now + IMClientMachine.lateAnswerGrace)
        _ = kept.timerFired(now: now + .milliseconds(10))  // an early fire inside the grace judges nothing
        #expect(!kept.isEnded)
        _ = kept.frameReceived(IMFrame(command: .heartbeat, serial: 7), now: now + .milliseconds(20))
        #expect(kept.nextDeadline == now + .milliseconds(20) + .seconds(15))

        var silent = Self.onlineSession(now: now)
        now = now + .seconds(20)
        _ = silent.timerFired(now: now, inputWaiting: true)
        #expect(!silent.isEnded)
        _ = silent.timerFired(now: now + IMClientMachine.lateAnswerGrace)
        #expect(silent.isEnded)

        // Once until the next frame: still bytes waiting but no frame after the grace is silence.
        var dripping = Self.onlineSession(now: now)
        now = now + .seconds(20)
        _ = dripping.timerFired(now: now, inputWaiting: true)
        _ = dripping.timerFired(now: now + IMClientMachine.lateAnswerGrace, inputWaiting: true)
        #expect(dripping.isEnded)
    }

    @Test("server: without bytes waiting, the keepalive rule is unchanged")
    func serverKeepaliveWithoutInput() {
        let start = LoopInstant(nanoseconds: 1_000_000_000_000)
        var session = Self.onlineSession(now: start)
        _ = session.timerFired(now: start + .seconds(15))
        #expect(session.isEnded)
    }

    @Test("a session machine keeps no actions buffer between frames (an idle connection's memory)")
    func noActionsBufferKept() {
        let start = LoopInstant(nanoseconds: 1_000_000_000)
        var session = Self.onlineSession(now: start)
        let answer = session.frameReceived(IMFrame(command: .heartbeat, serial: 2), now: start + .seconds(1))
        guard answer.count == 1, case .write(let frame) = answer[0] else {
            Issue.record("no single answer: \(answer)")
            return
        }
        #expect(frame.command == .heartbeatAck)
        #expect(session.actions.capacity == 0)
    }

    private static func onlineSession(now: LoopInstant) -> IMServerSessionMachine {
        var machine = IMServerSessionMachine(settings: .init(), now: now)
        var login = IMLoginRequest()
        login.user = "alice"
        login.keepaliveSeconds = 10
        _ = machine.frameReceived(IMFrame(command: .login, serial: 1, message: login), now: now)
        _ = machine.loginAccepted(user: "alice", sessionID: "s1", serverTimeMilliseconds: 0, now: now)
        return machine
    }
}

extension ClientHarness {
    /// Runs to the heartbeat (30 s of quiet), then to 2 s past its answer deadline in one jump, as a
    /// loop stalled that long would, and fires with the peer's bytes waiting unread.
    mutating func heartbeatAfterStall() -> IMFrame? {
        now = now + .seconds(30)
        record(machine.timerFired(now: now))
        guard let heartbeat = written(.heartbeat).last, let due = machine.nextDeadline else { return nil }
        now = due + .seconds(2)
        record(machine.timerFired(now: now, inputWaiting: true))
        return heartbeat
    }
}
