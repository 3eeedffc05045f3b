import Glibc
import RunLoopChat
import RunLoopChatCluster
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing

/// What a node committed and could not tell the others at the time: what they get.
@Suite("Chat cluster: commits the bus was not told of", .serialized)
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

    @Test(
        "a resend of a message whose first answer was lost after its commit is published then: the room's members on another node get it live, once"
    )
    func resendOfAnUnannouncedCommit() async throws {
        try await withNodes(["a", "b"]) { _, nodes in
            let ben = try nodes[1].member("ben", of: "r")
            let ann = try nodes[0].member("ann", of: "r")
            // Committed with nobody told, as when the connection to PostgreSQL broke before its answer.
            var committed: IMStoreResult?
            let lost = IMMessage(id: "lost-answer", from: "", recipient: .room("r"), text: "r1", seq: 0, sentAtMilliseconds: 0)
            nodes[0].store.store(lost, from: "ann", nowMilliseconds: 1) { committed = $0 }
            try wait("committed") { committed != nil }
            guard case .stored(_, _, isNew: true) = committed else { throw ResendTestFailure.notStored("\(String(describing: committed))") }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(300))
            #expect(ben.received.isEmpty, "nobody was told")
            // The client did not get its SEND_ACK and sends it again under the same id.
            try ann.send("r1", to: .room("r"), id: "lost-answer")
            try wait("ann's resend answered") { ann.isStored("lost-answer") }
            try wait("ben got it") { !ben.received.isEmpty }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
            #expect(ben.texts == ["r1"])
        }
    }
}

enum ResendTestFailure: Error {
    case notStored(String)
}
