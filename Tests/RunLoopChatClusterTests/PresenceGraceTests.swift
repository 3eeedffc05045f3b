import RunLoopKit
import Testing

@testable import RunLoopChatCluster

/// The users of a node that stopped gracefully: offline only if not back within the grace.
@Suite("Presence grace")
struct PresenceGraceTests {
    @Test("a user away with a stopped node expires after the grace unless back first; going away again restarts the grace")
    func expiry() {
        let start = LoopInstant(nanoseconds: 1_000_000_000)
        var grace = PresenceGrace(grace: .seconds(30))
        grace.away("alice", now: start)
        grace.away("amy", now: start + .seconds(1))
        grace.away("ann", now: start + .seconds(2))
        #expect(grace.nextDeadline == start + .seconds(30))
        grace.back("alice")
        #expect(grace.nextDeadline == start + .seconds(31), "alice's grace no longer runs")
        grace.away("ann", now: start + .seconds(10))
        #expect(grace.expired(now: start + .seconds(29)).isEmpty)
        #expect(grace.expired(now: start + .seconds(32)) == ["amy"], "alice came back; ann's grace began again")
        #expect(grace.nextDeadline == start + .seconds(40))
        #expect(grace.expired(now: start + .seconds(40)) == ["ann"])
        #expect(grace.nextDeadline == nil && grace.expired(now: start + .seconds(100)).isEmpty)
    }
}
