import RunLoopKit
import Testing

@testable import RunLoopNet

/// The link's decisions on plain instants: waits, cap, reset, stop, one connection at a time.
@Suite struct ReconnectMachineTests {
    let start = LoopInstant(nanoseconds: 1_000_000_000_000)

    func machine(maximumAttempts: Int? = nil) -> ReconnectMachine {
        let backoff = ReconnectBackoff.Policy(
            initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(4), jitter: 0, maximumAttempts: maximumAttempts)
        return ReconnectMachine(policy: ReconnectingLinkPolicy(backoff: backoff, stableTime: .seconds(10)), jitter: .constant(0))
    }

    /// Fails the attempt in progress at `now` and returns the wait it asked for.
    func failAttempt(_ machine: inout ReconnectMachine, at now: LoopInstant) -> Duration? {
        guard case .wait(let until, let delay)? = machine.connectionEnded(now: now) else { return nil }
        #expect(machine.timerFired(now: until) == .connect)
        return delay
    }

    @Test func failedAttemptsWaitLongerUpToTheCap() {
        var machine = machine()
        #expect(machine.start() == .connect)
        let waits = (0..<5).map { _ in failAttempt(&machine, at: start) }
        #expect(waits == [.seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4)])
    }

    @Test func aConnectionUpForTheStableTimeResetsTheWaits() {
        var machine = machine()
        _ = machine.start()
        _ = failAttempt(&machine, at: start)
        _ = failAttempt(&machine, at: start)
        machine.connected(now: start)
        #expect(failAttempt(&machine, at: start + .seconds(10)) == .seconds(1))
    }

    @Test func aConnectionThatDropsSoonerKeepsTheWaitsGrowing() {
        var machine = machine()
        _ = machine.start()
        _ = failAttempt(&machine, at: start)
        machine.connected(now: start)
        #expect(failAttempt(&machine, at: start + .seconds(9)) == .seconds(2))
    }

    @Test func noAttemptBeforeTheWaitEndsNorWhileOneIsUnderWay() {
        var machine = machine()
        #expect(machine.start() == .connect)
        #expect(machine.start() == nil)
        #expect(machine.timerFired(now: start) == nil)
        guard case .wait(let until, _)? = machine.connectionEnded(now: start) else {
            Issue.record("a failed attempt waits")
            return
        }
        #expect(machine.timerFired(now: until - .milliseconds(1)) == nil)
        #expect(machine.timerFired(now: until) == .connect)
        #expect(machine.timerFired(now: until) == nil)
        machine.connected(now: until)
        #expect(machine.state == .connected)
        #expect(machine.timerFired(now: until + .seconds(60)) == nil)
    }

    @Test func closeStopsEverythingThatFollows() {
        var machine = machine()
        _ = machine.start()
        machine.close()
        #expect(machine.connectionEnded(now: start) == nil)
        #expect(machine.timerFired(now: start + .seconds(60)) == nil)
        #expect(machine.start() == nil)
        #expect(machine.state == .closed)
    }

    @Test func theBackoffsLastAttemptGivesUp() {
        var machine = machine(maximumAttempts: 2)
        _ = machine.start()
        _ = failAttempt(&machine, at: start)
        _ = failAttempt(&machine, at: start)
        #expect(machine.connectionEnded(now: start) == .giveUp)
        #expect(machine.state == .gaveUp)
        #expect(machine.timerFired(now: start + .seconds(60)) == nil)
    }
}
