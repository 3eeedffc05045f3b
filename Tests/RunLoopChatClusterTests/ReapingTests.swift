import RunLoopKit
import RunLoopRedis
import RunLoopTesting
import Testing

@testable import RunLoopChatCluster

/// The retire script's guards, driven by hand: reapers that only reap when told.
@Suite("Reaping")
struct ReapingTests {
    /// Short leases, but a reap only when a node joins: the test decides when the others reap.
    let reapingByHand = NodeLeasePolicy(
        ttl: shortLeases.ttl, refreshInterval: shortLeases.refreshInterval, retryInterval: shortLeases.retryInterval,
        reapInterval: .seconds(3_600), commandTimeout: shortLeases.commandTimeout, reconnect: shortLeases.reconnect)

    @Test("two nodes reaping one dead node in the same pass reap it once; its users go offline once")
    func twoReapersReapOnce() async throws {
        let server = try RedisServer.start()
        try await onLoopThread {
            let loop = RunLoop.current
            let observer = try Observer(server)
            let nodes = ["a", "b", "c"].map { TestNode($0, server: server, policy: reapingByHand) }
            defer { for node in nodes { node.presence.close() } }
            try join(nodes)
            try open("ann", on: nodes[0])
            let epoch = try #require(nodes[0].epoch)
            nodes[0].presence.close()
            try #require(try observer.poll { try observer.call(["EXISTS", observer.keys.lease("a")]) == .integer(0) })

            var answers: [RetireAnswer?] = []
            for reaper in nodes[1...] { reaper.presence.retire("a", epoch: epoch, mode: "reap") { answers.append($0) } }
            try loop.runUntil(timeout: patience) { answers.count == 2 }
            #expect(answers.map { $0?.retired }.filter { $0 == true }.count == 1, "\(answers)")
            #expect(nodes[1].offline + nodes[2].offline == ["ann"])
            #expect(try observer.totals().isEmpty)
        }
    }

    @Test("a node that came back under a new epoch is not reaped under its old one, nor while its lease lives")
    func liveNodeNotReaped() async throws {
        let server = try RedisServer.start()
        try await onLoopThread {
            let loop = RunLoop.current
            let observer = try Observer(server)
            let (a, b) = (TestNode("a", server: server, policy: reapingByHand), TestNode("b", server: server, policy: reapingByHand))
            defer { b.presence.close() }
            try join([a, b])
            try open("ann", on: a)
            let oldEpoch = try #require(a.epoch)
            a.presence.close()
            let again = TestNode("a", server: server, policy: reapingByHand)
            defer { again.presence.close() }
            try join([again])
            try open("ann", on: again)

            var answers: [RetireAnswer?] = []
            b.presence.retire("a", epoch: oldEpoch, mode: "reap") { answers.append($0) }
            let againEpoch = try #require(again.epoch)
            b.presence.retire("a", epoch: againEpoch, mode: "reap") { answers.append($0) }
            try loop.runUntil(timeout: patience) { answers.count == 2 }
            #expect(answers.map { $0?.retired } == [false, false])
            #expect(try observer.totals() == ["ann": "1"])
            #expect(b.reaped.isEmpty)
        }
    }
}
