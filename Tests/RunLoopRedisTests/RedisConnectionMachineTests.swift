import RunLoopKit
import Testing

@testable import RunLoopRedis

/// The connection's decisions on their own, on a manual clock's instants: no hiredis, no socket.
/// (`#expect` cannot call a mutating method, hence the locals.)
@Suite struct RedisConnectionMachineTests {
    typealias Machine = RedisConnectionMachine<String>
    let clock = ManualClock()

    @Test func theConnectTimeoutAbandonsTheConnectionAndFailsWhatWaits() {
        var machine = Machine(connectTimeout: .seconds(5), commandTimeout: nil)
        let start = clock.now
        let started = machine.start(now: start)
        let startedAgain = machine.start(now: start)
        #expect(started && !startedAgain)
        _ = machine.submit("ping", timeout: nil, now: start)
        #expect(machine.nextDeadline == start + .seconds(5))
        clock.advance(by: .milliseconds(4_999))
        let early = machine.timerFired(now: clock.now)
        #expect(!early.abandonsConnect)
        clock.advance(by: .milliseconds(1))
        let due = machine.timerFired(now: clock.now)
        #expect(due.abandonsConnect)
        #expect(machine.phase == .closing(.timedOut(.connect)))
        // hiredis frees the context; the reason is the deadline's, not hiredis's message.
        let ending = machine.contextEnded(message: "Connection refused")
        #expect(ending?.reason == .timedOut(.connect))
        #expect(ending?.failed == ["ping"])
        let again = machine.contextEnded(message: nil)
        #expect(again == nil)
        #expect(machine.nextDeadline == nil)
    }

    @Test func beingConnectedClearsTheConnectDeadline() {
        var machine = Machine(connectTimeout: .seconds(5), commandTimeout: nil)
        _ = machine.start(now: clock.now)
        let news = machine.connected()
        let repeated = machine.connected()
        #expect(news && !repeated)
        #expect(machine.nextDeadline == nil)
        clock.advance(by: .seconds(60))
        let expiry = machine.timerFired(now: clock.now)
        #expect(!expiry.abandonsConnect)
        #expect(machine.phase == .ready)
    }

    @Test func aCommandTimesOutOnceAndItsLateReplyIsDropped() throws {
        var machine = Machine(connectTimeout: nil, commandTimeout: .seconds(1))
        let start = clock.now
        _ = machine.start(now: start)
        _ = machine.connected()
        let slow = try machine.submit("slow", timeout: nil, now: start).get()
        let blocking = try machine.submit("block", timeout: .seconds(60), now: start).get()
        let quick = try machine.submit("quick", timeout: .milliseconds(200), now: start).get()
        #expect(machine.nextDeadline == start + .milliseconds(200))
        clock.advance(by: .milliseconds(200))
        let first = machine.timerFired(now: clock.now)
        #expect(first.expired == ["quick"])
        let lateQuick = machine.complete(quick)
        #expect(lateQuick == nil)
        #expect(machine.nextDeadline == start + .seconds(1))
        clock.advance(by: .seconds(1))
        let second = machine.timerFired(now: clock.now)
        let third = machine.timerFired(now: clock.now)
        #expect(second.expired == ["slow"])
        #expect(third.expired == [])
        let lateSlow = machine.complete(slow)
        #expect(lateSlow == nil)
        #expect(machine.nextDeadline == start + .seconds(60))
        let answered = machine.complete(blocking)
        #expect(answered == "block")
        #expect(machine.nextDeadline == nil)
        #expect(machine.pendingCount == 0)
    }

    @Test func commandsDueTogetherExpireInTheOrderSent() {
        var machine = Machine(connectTimeout: nil, commandTimeout: .seconds(1))
        _ = machine.start(now: clock.now)
        _ = machine.submit("a", timeout: .seconds(2), now: clock.now)
        for name in ["b", "c", "d"] { _ = machine.submit(name, timeout: nil, now: clock.now) }
        clock.advance(by: .seconds(2))
        let expiry = machine.timerFired(now: clock.now)
        #expect(expiry.expired == ["a", "b", "c", "d"])
    }

    @Test func theEndFailsEveryWaitingCommandOnceInTheOrderSent() throws {
        var machine = Machine(connectTimeout: nil, commandTimeout: nil)
        _ = machine.start(now: clock.now)
        _ = machine.connected()
        var ids: [UInt64] = []
        for name in ["a", "b", "c", "d"] { ids.append(try machine.submit(name, timeout: nil, now: clock.now).get()) }
        let answered = machine.complete(ids[1])
        let answeredAgain = machine.complete(ids[1])
        #expect(answered == "b")
        #expect(answeredAgain == nil)
        let ending = machine.contextEnded(message: "Server closed the connection")
        #expect(ending?.reason == .connectionLost("Server closed the connection"))
        #expect(ending?.failed == ["a", "c", "d"])
        let afterEnd = machine.complete(ids[0])
        #expect(afterEnd == nil)
        let late = machine.submit("late", timeout: nil, now: clock.now)
        #expect(late == .failure(.connectionLost("Server closed the connection")))
    }

    @Test func anEndWhileConnectingIsAFailedConnect() {
        var machine = Machine(connectTimeout: nil, commandTimeout: nil)
        _ = machine.start(now: clock.now)
        let ending = machine.contextEnded(message: "Connection refused")
        #expect(ending?.reason == .connectionFailed("Connection refused"))
        #expect(machine.phase == .closed(.connectionFailed("Connection refused")))
    }

    @Test func closingFreesTheContextOnceAndItsEndSaysClosed() {
        var machine = Machine(connectTimeout: nil, commandTimeout: nil)
        _ = machine.start(now: clock.now)
        _ = machine.connected()
        _ = machine.submit("get", timeout: nil, now: clock.now)
        guard case .freeContext = machine.close(.closed) else { Issue.record("close did not free the context"); return }
        guard case .nothing = machine.close(.closed) else { Issue.record("a second close did something"); return }
        let after = machine.submit("after", timeout: nil, now: clock.now)
        #expect(after == .failure(.closed))
        let ending = machine.contextEnded(message: nil)
        #expect(ending?.reason == .closed)
        #expect(ending?.failed == ["get"])
    }

    @Test func closingBeforeConnectingEndsAtOnce() {
        var machine = Machine(connectTimeout: .seconds(5), commandTimeout: nil)
        let early = machine.submit("early", timeout: nil, now: clock.now)
        #expect(early == .failure(.closed))
        guard case .ended(let ending) = machine.close(.closed) else { Issue.record("an idle close did not end"); return }
        #expect(ending.reason == .closed)
        let started = machine.start(now: clock.now)
        #expect(!started)
    }
}
