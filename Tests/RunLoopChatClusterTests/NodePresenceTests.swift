import RunLoopChatCluster
import RunLoopKit
import RunLoopRedis
import RunLoopTesting
import Testing

/// Nodes sharing a real throw-away redis-server, one per test, with short leases.
@Suite("Node presence")
struct NodePresenceTests {
    @Test("two nodes join under distinct epochs and count one user's sessions across both")
    func twoNodesCount() async throws {
        try await withCluster(["a", "b"]) { cluster in
            let (observer, a, b) = (cluster.observer, cluster.nodes[0], cluster.nodes[1])
            #expect(a.epoch != b.epoch)
            let (epochA, epochB) = (try #require(a.epoch), try #require(b.epoch))
            #expect(try observer.hash(observer.keys.registry) == ["a": "\(epochA)", "b": "\(epochB)"])

            #expect(try open("ann", on: a) == .admitted(clusterTotal: 1))
            #expect(try open("ann", on: b) == .admitted(clusterTotal: 2))
            #expect(try observer.totals() == ["ann": "2"])
            #expect(try observer.hash(observer.keys.sessions("b")) == ["ann": "1"])

            a.presence.sessionClosed("ann")
            b.presence.sessionClosed("ann")
            try observer.waitForTotals([:])
            // The totals change in Redis before b has handled its script's answer and reported it.
            _ = try observer.poll { !(a.offline + b.offline).isEmpty }
            #expect(a.online == ["ann"] && b.online.isEmpty, "online once, by the node that made the total leave zero")
            #expect(b.offline == ["ann"] && a.offline.isEmpty, "offline once, by the node that made it reach zero")
            #expect(a.presence.sessionCounts.isEmpty && b.presence.sessionCounts.isEmpty)
        }
    }

    @Test("the session limit holds across three nodes: the third session is refused with the total")
    func limitAcrossNodes() async throws {
        // `throws` said: every `try` of this body is inside a macro, which the closure's type is
        // inferred without.
        try await withCluster(["a", "b", "c"]) { cluster throws in
            let (observer, a, b, c) = (cluster.observer, cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
            #expect(try open("ann", on: a, limit: 2) == .admitted(clusterTotal: 1))
            #expect(try open("ann", on: b, limit: 2) == .admitted(clusterTotal: 2))
            #expect(try open("ann", on: c, limit: 2) == .refused(clusterTotal: 2))
            #expect(c.presence.sessionCounts.isEmpty)
            #expect(try observer.totals() == ["ann": "2"])

            a.presence.sessionClosed("ann")
            // a's close and c's open travel on two connections with no order between them: the close
            // must have reached Redis first (under CI's load c's script came first and was refused).
            try observer.waitForTotals(["ann": "1"])
            #expect(try open("ann", on: c, limit: 2) == .admitted(clusterTotal: 2))
        }
    }

    @Test("leaving removes the node's lease, registry entry and counts at once; nobody reaps it after")
    func leaving() async throws {
        try await withCluster(["a", "b"]) { cluster in
            let (loop, observer, a, b) = (cluster.loop, cluster.observer, cluster.nodes[0], cluster.nodes[1])
            try open("ann", on: a)
            try open("bob", on: a)
            try open("ann", on: b)

            var left = false
            a.presence.leave { left = true }
            try loop.runUntil(timeout: patience) { left }
            #expect(a.presence.leaseState == .left)
            #expect(
                a.changes == [
                    PresenceChange(online: ["ann"], offline: [], cause: .sessions),
                    PresenceChange(online: ["bob"], offline: [], cause: .sessions),
                    PresenceChange(online: [], offline: ["bob"], cause: .left)
                ])
            #expect(try observer.totals() == ["ann": "1"])
            #expect(try observer.hash(observer.keys.registry).keys.sorted() == ["b"])
            #expect(try observer.call(["EXISTS", observer.keys.lease("a"), observer.keys.sessions("a")]) == .integer(0))

            _ = try loop.run(.default, timeout: shortLeases.ttl + shortLeases.reapInterval * 2)
            #expect(b.reaped.isEmpty)
        }
    }

    @Test("a node restarted under the same name replaces its previous counts and is not reaped")
    func restartedNodeReplacesItsCounts() async throws {
        try await withCluster(["a", "b"]) { cluster in
            let (loop, observer, a, b) = (cluster.loop, cluster.observer, cluster.nodes[0], cluster.nodes[1])
            try open("ann", on: a)
            try open("bob", on: a)
            try open("bob", on: b)
            let firstEpoch = try #require(a.epoch)
            a.presence.close()

            let again = TestNode("a", server: cluster.server)
            defer { again.presence.close() }
            try join([again])
            let againEpoch = try #require(again.epoch)
            #expect(againEpoch > firstEpoch)
            #expect(again.changes == [PresenceChange(online: [], offline: ["ann"], cause: .registered(epoch: againEpoch))])
            #expect(try observer.totals() == ["bob": "1"])
            _ = try loop.run(.default, timeout: shortLeases.ttl + shortLeases.reapInterval * 2)
            #expect(b.reaped.isEmpty)
            let epochB = try #require(b.epoch)
            #expect(try observer.hash(observer.keys.registry) == ["a": "\(againEpoch)", "b": "\(epochB)"])
        }
    }
}
