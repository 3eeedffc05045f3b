import RunLoopChatCluster
import RunLoopKit
import RunLoopRedis
import RunLoopTesting
import Testing

/// Nodes that die, pause, or lose Redis, against a real throw-away redis-server per test.
@Suite("Node presence faults")
struct NodePresenceFaultTests {
    @Test("a node that stops refreshing is reaped within a lease and a reap interval, its users offline exactly once")
    func deadNodeReaped() async throws {
        try await withCluster(["a", "b", "c"]) { cluster in
            let (loop, observer, nodes) = (cluster.loop, cluster.observer, cluster.nodes)
            let (a, b, c) = (nodes[0], nodes[1], nodes[2])
            try open("ann", on: a)
            try open("bob", on: a)
            try open("bob", on: b)

            let died = loop.now
            a.presence.close()
            try #require(try loop.runUntil(timeout: patience) { !(b.reaped + c.reaped).isEmpty })
            let reapedAfter = loop.now - died
            // Commands take a few milliseconds: a margin for them, not another lease.
            #expect(reapedAfter < shortLeases.ttl + shortLeases.reapInterval + .milliseconds(200), "reaped after \(reapedAfter)")

            // Both survivors keep reaping: the dead node is reaped once.
            _ = try loop.run(.default, timeout: shortLeases.reapInterval * 3)
            #expect(b.reaped + c.reaped == ["a"])
            #expect(b.offline + c.offline == ["ann"])
            #expect(try observer.totals() == ["bob": "1"])
            #expect(try observer.hash(observer.keys.registry).keys.sorted() == ["b", "c"])
        }
    }

    @Test("a node paused past its lease comes back fenced, rejoins under a new epoch and brings its users back")
    func pausedNodeFenced() async throws {
        let server = try RedisServer.start()
        try await onLoopThread {
            let loop = RunLoop.current
            // Running the loop in `others` runs b and the observer but not a: a is paused.
            let others = RunLoop.Mode("others")
            let observer = try Observer(server)
            let a = TestNode("a", server: server, modes: [.default])
            let b = TestNode("b", server: server, modes: [.default, others])
            try join([a, b])
            try open("ann", on: a)
            let firstEpoch = try #require(a.epoch)

            try #require(try loop.runUntil(in: others, timeout: patience) { b.offline == ["ann"] })

            try #require(try loop.runUntil(timeout: patience) { a.online.count == 2 && a.epoch != nil })
            let epoch = try #require(a.epoch)
            #expect(a.leaseStates.first == .held(epoch: firstEpoch))
            #expect(a.leaseStates.suffix(2) == [.fenced, .held(epoch: epoch)])
            #expect(epoch > firstEpoch)
            #expect(a.changes.last == PresenceChange(online: ["ann"], offline: [], cause: .registered(epoch: epoch)))
            #expect(try observer.totals() == ["ann": "1"])
            #expect(try open("ann", on: a) == .admitted(clusterTotal: 2))
            a.presence.close()
            b.presence.close()
        }
    }

    @Test("Redis killed: logins are decided on the node's counts; restarted empty: nodes rejoin and the counts are right again")
    func redisRestartedEmpty() async throws {
        try await withCluster(["a", "b"]) { cluster in
            let (loop, server, a, b) = (cluster.loop, cluster.server, cluster.nodes[0], cluster.nodes[1])
            try open("ann", on: a)
            try open("ann", on: b)
            try open("bob", on: b)
            let epochs = [a.epoch, b.epoch]

            server.kill()
            let asked = loop.now
            #expect(try open("cid", on: a) == .admitted(clusterTotal: nil))
            #expect(loop.now - asked <= shortLeases.commandTimeout + .milliseconds(200), "a login never waits long for Redis")
            #expect(try open("cid", on: a, limit: 1) == .refused(clusterTotal: 1))

            try server.restart()
            let observer = try Observer(server)
            try observer.waitForTotals(["ann": "2", "bob": "1", "cid": "1"])
            try loop.runUntil(timeout: patience) { a.presence.isSharingCounts && b.presence.isSharingCounts }
            #expect(try observer.hash(observer.keys.registry).keys.sorted() == ["a", "b"])
            // The epoch counter started over with Redis, the nodes' epochs did not.
            #expect(zip(epochs, [a.epoch, b.epoch]).allSatisfy { $0! < $1! })
            #expect(a.leaseStates.contains(.fenced) && b.leaseStates.contains(.fenced))
            #expect(try open("ann", on: a, limit: 2) == .refused(clusterTotal: 2))
        }
    }

    @Test("Redis asleep past the command timeout: a login is admitted alone, and counted once when Redis wakes")
    func redisAsleep() async throws {
        try await withCluster(["a", "b"]) { cluster in
            let (loop, observer, a) = (cluster.loop, cluster.observer, cluster.nodes[0])
            observer.sendAndForget(["DEBUG", "SLEEP", "0.6"])
            // Let the sleep reach Redis before the node's script does (two connections: no order
            // between them otherwise — under the thread sanitizer the script came first).
            _ = try loop.run(.default, timeout: .milliseconds(50))
            let asked = loop.now
            // The script stays on the wire and runs when Redis wakes; its answer comes too late.
            #expect(try open("ann", on: a) == .admitted(clusterTotal: nil))
            #expect(loop.now - asked <= shortLeases.commandTimeout + .milliseconds(200))
            try observer.waitForTotals(["ann": "1"])
            _ = try loop.run(.default, timeout: shortLeases.ttl)
            #expect(try observer.totals() == ["ann": "1"])
            #expect(try observer.hash(observer.keys.sessions("a")) == ["ann": "1"])
            #expect(a.presence.sessionCounts == ["ann": 1])
            #expect(a.online.contains("ann"), "announced although the answer that said so was lost")
        }
    }

    @Test("CLIENT KILL: nodes reconnect and re-register without a user going offline")
    func clientKill() async throws {
        try await withCluster(["a", "b"]) { cluster in
            let (loop, observer, a, b) = (cluster.loop, cluster.observer, cluster.nodes[0], cluster.nodes[1])
            try open("ann", on: a)
            try open("ann", on: b)

            let killed = try observer.call(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"])
            #expect(killed == .integer(2))
            try loop.runUntil(timeout: patience) { !a.presence.isSharingCounts && !b.presence.isSharingCounts }
            try loop.runUntil(timeout: patience) { a.presence.isSharingCounts && b.presence.isSharingCounts }
            #expect(try open("bob", on: b) == .admitted(clusterTotal: 1))
            #expect(try observer.totals() == ["ann": "2", "bob": "1"])
            #expect(a.offline.isEmpty && b.offline.isEmpty)
        }
    }

    @Test("Redis down when the node starts: it keeps trying, admits on its own counts, and registers them once Redis is up")
    func redisDownAtStart() async throws {
        let server = try RedisServer.start()
        server.kill()
        try await onLoopThread {
            let loop = RunLoop.current
            let a = TestNode("a", server: server)
            a.presence.start()
            #expect(try open("ann", on: a) == .admitted(clusterTotal: nil))
            _ = try loop.run(.default, timeout: shortLeases.ttl)
            #expect(a.presence.leaseState == .joining)

            try server.restart()
            let observer = try Observer(server)
            try observer.waitForTotals(["ann": "1"])
            let epoch = try #require(a.epoch)
            #expect(a.changes == [PresenceChange(online: ["ann"], offline: [], cause: .registered(epoch: epoch))])
            a.presence.close()
        }
    }
}
