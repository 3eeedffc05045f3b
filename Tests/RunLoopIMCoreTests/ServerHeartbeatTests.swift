import RunLoopKit
import Testing

@testable import RunLoopIMCore

/// The heartbeat path of a server session (issue 22: every idle connection's only frame), answered
/// without the machine's action list, and the keepalive deadline it moves, worked out in nanoseconds.
@Suite("Server session: heartbeats and the keepalive deadline")
struct ServerHeartbeatTests {
    let start = LoopInstant(nanoseconds: 1_000_000_000)

    func onlineMachine(keepalive: UInt32, _ adjust: (inout IMServerSessionMachine.Settings) -> Void = { _ in }) -> IMServerSessionMachine {
        var settings = IMServerSessionMachine.Settings()
        adjust(&settings)
        return .loggedIn(at: start, announcing: keepalive, settings: settings)
    }

    @Test("a HEARTBEAT is answered with its serial and moves the deadline, as frameReceived does with it; none once ended")
    func heartbeatAnsweredLikeAnyFrame() {
        var direct = onlineMachine(keepalive: 30)
        var general = direct
        let later = start + .seconds(20)
        let ack = direct.heartbeatReceived(serial: 7, now: later)
        #expect(ack == IMFrame(command: .heartbeatAck, serial: 7))
        #expect(general.frameReceived(IMFrame(command: .heartbeat, serial: 7), now: later) == [.write(IMFrame(command: .heartbeatAck, serial: 7))])
        #expect(direct.nextDeadline == later + .seconds(45))
        #expect(direct.nextDeadline == general.nextDeadline)
        _ = direct.transportClosed("gone")
        #expect(direct.heartbeatReceived(serial: 8, now: later) == nil)
    }

    @Test("heartbeatAnswered gives heartbeatReceived's answer and the deadline it leaves; none once ended")
    func heartbeatAnsweredWithDeadline() {
        var combined = onlineMachine(keepalive: 30)
        var separate = combined
        let later = start + .seconds(20)
        let (ack, next) = combined.heartbeatAnswered(serial: 9, now: later)
        #expect(ack == separate.heartbeatReceived(serial: 9, now: later))
        #expect(ack == IMFrame(command: .heartbeatAck, serial: 9))
        #expect(next == separate.nextDeadline)
        #expect(next == later + .seconds(45))
        #expect(combined.nextDeadline == next)
        _ = combined.transportClosed("gone")
        let (lateAck, lateNext) = combined.heartbeatAnswered(serial: 10, now: later + .seconds(1))
        #expect(lateAck == nil && lateNext == nil)
    }

    @Test("the keepalive deadline, within the bounds, is where the timer ends the session, not a nanosecond before")
    func deadlineWithinBounds() throws {
        // 0: the longest honoured; past the bounds: clamped to them.
        #expect(onlineMachine(keepalive: 0).nextDeadline == start + .seconds(1350))
        #expect(onlineMachine(keepalive: 1) { $0.minimumKeepalive = .seconds(4) }.nextDeadline == start + .seconds(6))
        var machine = onlineMachine(keepalive: 10) { $0.keepaliveMultiplier = 1.1 }
        let deadline = try #require(machine.nextDeadline)
        #expect(deadline == start + .seconds(11))
        #expect(machine.timerFired(now: deadline - .nanoseconds(1)).isEmpty)
        let ended = machine.timerFired(now: deadline)
        #expect(ended.contains(.end(.keepaliveExpired(silentFor: .seconds(11)))))
    }
}
