import RunLoopKit
import Testing

@testable import RunLoopPostgres

/// The connection's phases and deadlines, on instants chosen by the test.
@Suite struct PostgresConnectionMachineTests {
    let start = LoopInstant(nanoseconds: 1_000_000_000)

    @Test func aNameIsResolvedFirstAndTheConnectDeadlineCoversBoth() {
        var machine = PostgresConnectionMachine(connectTimeout: .seconds(5), queryTimeout: nil)
        #expect(machine.start(needsResolving: true, now: start) == [.resolve])
        #expect(machine.phase == .resolving)
        #expect(machine.nextDeadline == start + .seconds(5))
        #expect(machine.resolved(failure: nil) == [.startConnecting])
        #expect(machine.polled(.writing) == [.watch(.writable)])
        #expect(machine.polled(.reading) == [.watch(.readable)])
        #expect(machine.timerFired(now: start + .seconds(4)).isEmpty)
        #expect(machine.timerFired(now: start + .seconds(5)) == [.close(.timedOut(.connect))])
        #expect(machine.phase == .closed(.timedOut(.connect)))
    }

    @Test func aSocketDirectoryConnectsAtOnceAndReadyDisarmsTheConnectDeadline() {
        var machine = PostgresConnectionMachine(connectTimeout: .seconds(5), queryTimeout: nil)
        #expect(machine.start(needsResolving: false, now: start) == [.startConnecting])
        #expect(machine.polled(.ok) == [.becomeReady])
        #expect(machine.phase == .ready)
        #expect(machine.nextDeadline == nil)
        #expect(machine.timerFired(now: start + .seconds(60)).isEmpty)
    }

    @Test func failuresCarryTheirMessageAndCloseOnce() {
        var machine = PostgresConnectionMachine(connectTimeout: nil, queryTimeout: nil)
        _ = machine.start(needsResolving: true, now: start)
        #expect(machine.resolved(failure: "no such host") == [.close(.connectionFailed("no such host"))])
        #expect(machine.close(.closed).isEmpty)
        #expect(machine.polled(.ok).isEmpty)

        var refused = PostgresConnectionMachine(connectTimeout: nil, queryTimeout: nil)
        _ = refused.start(needsResolving: false, now: start)
        #expect(refused.polled(.failed("Connection refused")) == [.close(.connectionFailed("Connection refused"))])
    }

    @Test func theQueryTimeoutCountsOnlyWhileResultsAreAwaitedAndRestartsOnProgress() {
        var machine = PostgresConnectionMachine(connectTimeout: nil, queryTimeout: .seconds(2))
        _ = machine.start(needsResolving: false, now: start)
        _ = machine.polled(.ok)
        #expect(machine.nextDeadline == nil)
        machine.awaitingResults(true, now: start)
        #expect(machine.nextDeadline == start + .seconds(2))
        machine.awaitingResults(true, now: start + .seconds(1))
        #expect(machine.timerFired(now: start + .seconds(2)).isEmpty)
        machine.awaitingResults(false, now: start + .seconds(2))
        #expect(machine.nextDeadline == nil)
        machine.awaitingResults(true, now: start + .seconds(10))
        #expect(machine.timerFired(now: start + .seconds(12)) == [.close(.timedOut(.query))])
    }
}
