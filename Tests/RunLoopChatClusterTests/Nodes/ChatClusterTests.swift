import RunLoopChat
import RunLoopChatCluster
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing

/// Chat nodes on one loop, each an `IMServer` over its own PostgreSQL connection and its own bus and
/// presence in a shared Redis (both real, throw-away), clients on in-memory links: what a client on
/// one node sends reaches the others once, in order, through every fault of Redis and PostgreSQL.
@Suite("Chat cluster", .serialized)
struct ChatClusterTests {
    @Test("a direct message from a client on node A reaches its recipient on node B once, with its conversation_seq")
    func directAcrossNodes() async throws {
        try await withNodes(["a", "b"]) { _, nodes in
            let alice = nodes[0].client("alice")
            let bob = nodes[1].client("bob")
            try wait("both online") { alice.isOnline && bob.isOnline }
            let ids = try (1...3).map { try alice.send("hi \($0)", to: .user("bob")) }
            try wait("bob got all three") { bob.received.count >= 3 }
            try wait("all acknowledged") { ids.allSatisfy(alice.isStored) }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
            #expect(bob.texts == ["hi 1", "hi 2", "hi 3"])
            #expect(bob.received.map(\.conversationSeq) == [1, 2, 3])
            #expect(bob.received.allSatisfy { $0.from == "alice" })
        }
    }

    @Test("a room with members on three nodes: every member gets every other member's message once, in order; a non-member none")
    func roomOnThreeNodes() async throws {
        try await withNodes(["a", "b", "c"]) { _, nodes in
            let ann = nodes[0].client("ann")
            let ben = nodes[1].client("ben")
            let cat = nodes[2].client("cat")
            let dan = nodes[1].client("dan")
            let members = [ann, ben, cat]
            try wait("all online") { (members + [dan]).allSatisfy(\.isOnline) }
            for member in members { try member.join("r") }
            for round in 1...4 {
                for (index, member) in members.enumerated() { try member.send("\(index):\(round)", to: .room("r")) }
            }
            try wait("every member got the 8 messages of the others") { members.allSatisfy { $0.received.count >= 8 } }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
            for (index, member) in members.enumerated() {
                #expect(member.received.count == 8, "member \(index): \(member.texts)")
                #expect(!member.texts.contains { $0.hasPrefix("\(index):") }, "never one's own")
                let numbers = member.received.map(\.conversationSeq)
                #expect(numbers == numbers.sorted() && Set(numbers).count == numbers.count, "in order, once: \(numbers)")
            }
            #expect(dan.received.isEmpty, "a non-member on a member's node gets nothing")
        }
    }

    @Test(
        "a user online on node A is announced to node B's users who share a conversation with them — online, then offline when their session ends — and to no one else"
    )
    func presenceAcrossNodes() async throws {
        try await withNodes(["a", "b"]) { _, nodes in
            let bob = try nodes[1].member("bob", of: "r")
            let carol = nodes[1].client("carol")
            try wait("carol online") { carol.isOnline }
            let alice = try nodes[0].member("alice", of: "r")
            try wait("bob told alice is online") { bob.presence["alice"] == true }
            alice.chat.connection.close()
            try wait("bob told alice is offline") { bob.presence["alice"] == false }
            #expect(!nodes[1].server.clusterOnlineUsers.contains("alice"))
            #expect(carol.presence.isEmpty, "carol shares nothing with alice: \(carol.presence)")
        }
    }

    @Test("a JOIN and a LEAVE on node A reach the room's members on node B as MEMBERSHIP, with the count both nodes share")
    func membershipAcrossNodes() async throws {
        try await withNodes(["a", "b"]) { _, nodes in
            let bob = try nodes[1].member("bob", of: "r")
            let alice = try nodes[0].member("alice", of: "r")
            try wait("bob told alice joined") { !bob.membership.isEmpty }
            try alice.leave("r")
            try wait("bob told alice left") { bob.membership.count >= 2 }
            #expect(
                bob.membership == [
                    MembershipChange(room: "r", user: "alice", joined: true, members: 2),
                    MembershipChange(room: "r", user: "alice", joined: false, members: 1)
                ])
            #expect(alice.membership.isEmpty, "bob joined before alice was in the room")
        }
    }

    @Test(
        "a node's graceful stop announces no one offline: a user who logs in on another node within the grace never was; one who does not is offline after it"
    )
    func gracefulStopIsNoOfflineStorm() async throws {
        try await withNodes(["a", "b"]) { _, nodes in
            let bob = try nodes[1].member("bob", of: "r")
            let movers = try ["alice", "amy"].map { try nodes[0].member($0, of: "r") }
            try wait("bob told both are online") { bob.presence["alice"] == true && bob.presence["amy"] == true }
            var offline: [String] = []
            bob.chat.onPresence = { _, change in if !change.isOnline { offline.append(change.user) } }
            // Told shuttingDown, they would log in on a again (memory links reach a stopped server).
            for mover in movers { mover.chat.connection.onDisconnect = { connection, _ in connection.close() } }
            try nodes[0].stop()
            let alice = nodes[1].client("alice")
            try wait("alice back, on b") { alice.isOnline }
            #expect(offline.isEmpty, "announced offline during the stop: \(offline)")
            // The grace is 600 ms: amy, who did not come back, goes offline after it.
            try wait("amy offline after the grace") { offline == ["amy"] }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(700))
            #expect(offline == ["amy"], "alice moved, she never went offline")
            #expect(nodes[1].server.clusterOnlineUsers == ["alice", "bob"])
        }
    }

    @Test("a node that joins later announces who is online already on the others")
    func lateNodeKnowsWhoIsOnline() async throws {
        try await withNodes(["a"]) { servers, nodes in
            let alice = nodes[0].client("alice")
            try wait("alice online") { alice.isOnline && nodes[0].server.clusterOnlineUsers.contains("alice") }
            try alice.join("r")
            let late = ChatNodeUnderTest("b", servers: servers)
            defer { late.kill() }
            try wait("the late node ready") { late.isReady }
            let bob = try late.member("bob", of: "r")
            try wait("bob told alice is online") { bob.presence["alice"] == true }
        }
    }

    @Test("the per-user session limit holds across nodes: a second session on another node is refused like a local one")
    func sessionLimitAcrossNodes() async throws {
        try await withNodes(["a", "b"], maximumSessionsPerUser: 1) { _, nodes in
            let first = nodes[0].client("alice")
            try wait("first session online") { first.isOnline }
            let second = nodes[1].client("alice")
            try wait("second refused") { !second.disconnects.isEmpty }
            guard case .loginRefused(.tooManyConnections, let reason) = second.disconnects[0] else {
                Issue.record("refused how? \(second.disconnects)")
                return
            }
            #expect(reason.contains("already has 1 session"))
            #expect(nodes[1].server.onlineUsers.isEmpty && first.isOnline)
            first.chat.connection.close()
            try wait("the second gets in once the first is gone") { second.isOnline }
        }
    }

    @Test("a node killed without leaving: its users go offline on the others within lease and reap interval")
    func killedNode() async throws {
        try await withNodes(["a", "b"]) { _, nodes in
            let bob = try nodes[1].member("bob", of: "r")
            let alice = try nodes[0].member("alice", of: "r")
            try wait("alice announced") { bob.presence["alice"] == true }
            let killed = RunLoop.current.now
            nodes[0].kill()
            // Its clients would reconnect elsewhere; this one must not come back to the dead node.
            alice.chat.connection.close()
            try wait("alice offline on b") { bob.presence["alice"] == false }
            let took = RunLoop.current.now - killed
            // Lease 400 ms + reap every 200 ms, and a few commands' time on a busy machine.
            #expect(took < .seconds(3), "took \(took)")
        }
    }

    @Test("Redis killed while messages flow and started again: every message acknowledged and delivered once, in order")
    func redisRestart() async throws {
        try await withNodes(["a", "b"]) { servers, nodes in
            let alice = nodes[0].client("alice")
            let bob = nodes[1].client("bob")
            try wait("both online") { alice.isOnline && bob.isOnline }
            var ids: [String] = []
            for number in 1...5 { ids.append(try alice.send("m\(number)", to: .user("bob"))) }
            try wait("first five") { bob.received.count >= 5 }
            servers.redis.kill()
            for number in 6...10 { ids.append(try alice.send("m\(number)", to: .user("bob"))) }
            try wait("acknowledged while Redis is down: the store is the truth") { ids.allSatisfy(alice.isStored) }
            try servers.redis.restart()
            for number in 11...15 { ids.append(try alice.send("m\(number)", to: .user("bob"))) }
            try wait("all acknowledged") { ids.allSatisfy(alice.isStored) }
            try wait("all delivered") { bob.received.count >= 15 }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
            #expect(bob.texts == (1...15).map { "m\($0)" })
        }
    }

    @Test("PostgreSQL stopped: a SEND is answered internalError, resent by the client after the restart, stored and delivered once")
    func postgresStopped() async throws {
        try await withNodes(["a", "b"]) { servers, nodes in
            let alice = nodes[0].client("alice")
            let bob = nodes[1].client("bob")
            try wait("both online") { alice.isOnline && bob.isOnline }
            try alice.send("before", to: .user("bob"))
            try wait("before delivered") { bob.received.count == 1 }
            servers.postgres.stop()
            let id = try alice.send("during", to: .user("bob"))
            try wait("refused for now") { nodes[0].logs.records.get().contains { $0.message.contains("message \(id) from alice") } }
            #expect(!alice.isStored(id))
            try servers.postgres.restart()
            try wait("stored after the restart") { alice.isStored(id) }
            try wait("delivered") { bob.received.count >= 2 }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
            #expect(bob.texts == ["before", "during"])
        }
    }
}
