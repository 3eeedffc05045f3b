import Glibc
import RunLoopChat
import RunLoopChatCluster
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing

/// A node that could not publish for longer than it keeps events: what the others get.
@Suite("Chat cluster: catching up after a long publish outage", .serialized)
struct ChatClusterCatchUpTests {
    @Test(
        "a node that dropped events it could not publish tells the others to catch up when Redis is back: a room's last messages, whose events were dropped, still reach its members on another node"
    )
    func catchUpAfterDroppedEvents() async throws {
        let servers = try await SharedServers.start()
        // Node a reaches Redis through a path that does not exist yet: every publish fails until the
        // test makes it, while node b is connected throughout.
        let late = servers.redis.socketPath + "-late"
        try await onLoopThread {
            let b = ChatNodeUnderTest("b", servers: servers)
            let a = ChatNodeUnderTest("a", servers: servers, redisSocket: late, maximumUnpublished: 3)
            let nodes = [a, b]
            defer {
                for node in nodes { node.kill() }
                _ = try? RunLoop.current.run(.default, timeout: .milliseconds(50))
            }
            do {
                try wait("b ready") { b.isReady }
                let ben = try b.member("ben", of: "r")
                let ann = try a.member("ann", of: "r")
                // The room's messages first, then more events than a keeps (three JOINs): had the oldest
                // been dropped, r's messages would be gone from the bus, and nothing later in r would
                // show ben the gap.
                let sent = try ["r1", "r2"].map { try ann.send($0, to: .room("r")) }
                try wait("both stored") { sent.allSatisfy(ann.isStored) }
                for room in ["s1", "s2", "s3"] { try ann.join(room) }
                // Each failed publish is answered within the bus's publish timeout (300 ms here).
                _ = try RunLoop.current.run(.default, timeout: .milliseconds(600))
                #expect(!a.cluster.bus.isPublishing)
                #expect(ben.received.isEmpty, "nothing reached b: \(ben.texts)")
                #expect(symlink(servers.redis.socketPath, late) == 0)
                try wait("ben got both") { ben.texts.count >= 2 }
                _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
                #expect(ben.texts == ["r1", "r2"], "in order, once each")
                #expect(b.logs.records.get().contains { $0.message.description.contains("catching up from the store") })
            } catch {
                for node in nodes { node.printLog() }
                throw error
            }
        }
    }
}
