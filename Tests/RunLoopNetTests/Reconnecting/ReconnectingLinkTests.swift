import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// A connection that does what the test says: it comes up or fails when told.
final class ScriptedConnection: ReconnectableConnection {
    struct Failure: Error, Equatable { let reason: String }

    var onConnect: ((ScriptedConnection) -> Void)?
    var onClose: ((ScriptedConnection, Failure) -> Void)?
    private(set) var connectCalls = 0
    private(set) var closeCalls = 0

    func connect() { connectCalls += 1 }
    func close() { closeCalls += 1 }
    func comeUp() { onConnect?(self) }
    func fail(_ reason: String) { onClose?(self, Failure(reason: reason)) }
}

/// A link on the current loop, whose clock moves only to the next deadline, and every connection
/// its factory made.
final class ScriptedLink {
    let loop = RunLoop.current
    private(set) var made: [ScriptedConnection] = []
    private(set) var link: ReconnectingLink<ScriptedConnection>!

    init(policy: ReconnectingLinkPolicy = ReconnectingLinkPolicy()) throws {
        try loop.setClock(.manual(ManualClock()))
        link = ReconnectingLink(policy: policy, jitter: .constant(0)) { [unowned self] in
            made.append(ScriptedConnection())
            return made.last!
        }
    }

    /// Runs the loop until the factory made `count` connections; returns how long that took on the clock.
    func runUntilMade(_ count: Int) throws -> Duration {
        let before = loop.now
        try loop.runUntil(timeout: .seconds(30)) { self.made.count == count }
        return loop.now - before
    }
}

/// The link on a manual clock: waits, a new connection per attempt, the connection exposed only
/// while up, close.
@Suite struct ReconnectingLinkTests {
    struct Observed: Sendable, Equatable {
        var madeConnections = 0
        var failures: [String] = []
        var waits: [Duration?] = []
        var waitedOnTheClock: [Duration] = []
        var connectionWhileDown = false
    }

    @Test func aFailedConnectionIsReplacedAfterTheBackoffOnTheLoopsClock() async throws {
        let observed = try await onLoopThread {
            let backoff = ReconnectBackoff.Policy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(60), jitter: 0)
            let scripted = try ScriptedLink(policy: ReconnectingLinkPolicy(backoff: backoff))
            let link = scripted.link!
            var observed = Observed()
            link.onAttemptFailed = { failure, wait in
                observed.failures.append(failure.reason)
                observed.waits.append(wait)
            }
            var connectedTo: ScriptedConnection?
            link.onConnect = { connectedTo = $0 }
            link.start()
            link.start()
            scripted.made[0].fail("refused")
            observed.connectionWhileDown = link.connection != nil
            scripted.made[0].fail("a second report of the same end")
            observed.waitedOnTheClock.append(try scripted.runUntilMade(2))
            scripted.made[1].fail("refused again")
            observed.waitedOnTheClock.append(try scripted.runUntilMade(3))
            scripted.made[2].comeUp()
            #expect(connectedTo === scripted.made[2])
            #expect(link.connection === scripted.made[2])
            #expect(link.state == .connected)
            // Up: no timer is armed, so nothing more is made however long the loop runs.
            try scripted.loop.run(.default, timeout: .seconds(3600))
            observed.madeConnections = scripted.made.count
            #expect(scripted.made.map(\.connectCalls) == [1, 1, 1])
            return observed
        }
        #expect(observed.failures == ["refused", "refused again"])
        #expect(observed.waits == [.seconds(1), .seconds(2)])
        #expect(observed.waitedOnTheClock == [.seconds(1), .seconds(2)])
        #expect(observed.madeConnections == 3)
        #expect(observed.connectionWhileDown == false)
    }

    @Test func closeEndsTheConnectionAndEveryLaterAttempt() async throws {
        let (made, closes, failures, state) = try await onLoopThread {
            let scripted = try ScriptedLink()
            let link = scripted.link!
            var failures = 0
            link.onAttemptFailed = { _, _ in failures += 1 }
            link.start()
            scripted.made[0].comeUp()
            link.close()
            link.close()
            // A late report from the closed connection changes nothing.
            scripted.made[0].fail("closed")
            try scripted.loop.run(.default, timeout: .seconds(3600))
            return (scripted.made.count, scripted.made[0].closeCalls, failures, link.state)
        }
        #expect(made == 1)
        #expect(closes == 1)
        #expect(failures == 0)
        #expect(state == .closed)
    }

    @Test func closeWhileWaitingCancelsTheNextAttempt() async throws {
        let (made, state) = try await onLoopThread {
            let scripted = try ScriptedLink()
            scripted.link.start()
            scripted.made[0].fail("refused")
            scripted.link.close()
            try scripted.loop.run(.default, timeout: .seconds(3600))
            return (scripted.made.count, scripted.link.state)
        }
        #expect(made == 1)
        #expect(state == .closed)
    }
}
