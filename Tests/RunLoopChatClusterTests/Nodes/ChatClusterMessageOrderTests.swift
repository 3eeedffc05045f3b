import RunLoopChat
import RunLoopChatCluster
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing
import ThrowawayServers

/// A room message whose bus entry reaches a node before the entry of a LEAVE that committed before
/// it: the node holds the message until the LEAVE is in, so the user who left never gets it. Node b
/// (a ``SlowBusNode``) commits at once and publishes when the test says.
@Suite("Chat cluster: a room message told before a LEAVE committed before it", .serialized)
struct ChatClusterMessageOrderTests {
    @Test(
        "alice leaves r on node B, and bob's next message, committed on node C after it, reaches node A first: A gives it to ann once, never to alice"
    )
    func messageFromAnotherNodeBeforeTheLeave() async throws {
        try await Self.withSlowBus(["a", "c"]) { nodes, b in
            let (alice, ann, bob) = try Self.trackedWithBob(nodes)
            try bob.send("before", to: .room("r"))
            try wait("alice and ann have bob's first message") { alice.texts == ["before"] && ann.texts == ["before"] }

            let left = try b.commit(join: false, "r", "alice")
            let after = try bob.send("after her leave", to: .room("r"))
            try wait("bob's message stored") { bob.isStored(after) }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(300))
            #expect(alice.texts == ["before"], "a message of a room she had left")

            try b.publish(.membership(user: "alice", room: "r", joined: false, seq: left.seq))
            try wait("ann has bob's message once the LEAVE is in") { ann.texts == ["before", "after her leave"] }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
            #expect(alice.texts == ["before"])
            #expect(ann.texts == ["before", "after her leave"], "once")
        }
    }

    @Test("a message committed on node B after alice's LEAVE there, published before it: A gives it to ann once, never to alice")
    func messageFromTheSameNodeBeforeTheLeave() async throws {
        try await Self.withSlowBus(["a"]) { nodes, b in
            let (alice, ann) = try Self.tracked(on: nodes[0])

            let bobJoined = try b.commit(join: true, "r", "bob")
            try b.publish(.membership(user: "bob", room: "r", joined: true, seq: bobJoined.seq))
            let left = try b.commit(join: false, "r", "alice")
            let message = try b.commit("after her leave", from: "bob", to: "r")
            #expect(b.membershipSeqs[message.seq] == left.seq)
            try b.publish(.message(message, membershipSeq: b.membershipSeqs[message.seq]))
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(300))
            #expect(alice.texts.isEmpty, "a message of a room she had left")

            try b.publish(.membership(user: "alice", room: "r", joined: false, seq: left.seq))
            try wait("ann has bob's message once the LEAVE is in") { ann.texts == ["after her leave"] }
            // Published again (a resend's): a duplicate, dropped.
            try b.publish(.message(message))
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
            #expect(alice.texts.isEmpty)
            #expect(ann.texts == ["after her leave"], "once")
        }
    }

    @Test(
        "the LEAVE never comes (its node died before publishing): after the wait the members read the message from the store — ann gets it, alice does not — and the room's later messages pass"
    )
    func leaveThatNeverComes() async throws {
        try await Self.withSlowBus(["a", "c"]) { nodes, b in
            let (alice, ann, bob) = try Self.trackedWithBob(nodes)

            _ = try b.commit(join: false, "r", "alice")
            b.close()
            try bob.send("after her leave", to: .room("r"))
            try wait("ann has bob's message from the store, after the wait") { ann.texts == ["after her leave"] }
            try bob.send("later", to: .room("r"))
            try wait("ann has the next one") { ann.texts == ["after her leave", "later"] }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
            #expect(alice.texts.isEmpty)
        }
    }

    /// Nodes `ids` and a ``SlowBusNode`` beside them, every one ready.
    static func withSlowBus(_ ids: [String], _ body: @escaping @Sendable ([ChatNodeUnderTest], SlowBusNode) throws -> Void) async throws {
        try await withNodes(ids) { servers, nodes in
            let b = SlowBusNode(servers: servers)
            defer { b.close() }
            try wait("b's store and bus up") { b.isReady }
            try body(nodes, b)
        }
    }

    /// ``tracked(on:)`` on node A, and bob, a member of r too, on node C.
    static func trackedWithBob(_ nodes: [ChatNodeUnderTest]) throws -> (TestClient, TestClient, TestClient) {
        let (alice, ann) = try tracked(on: nodes[0])
        return (alice, ann, try nodes[1].member("bob", of: "r"))
    }

    /// Alice and ann on `node`, both members of r, with their rooms loaded there (a direct message
    /// each, answered after the load on the node's one store connection).
    static func tracked(on node: ChatNodeUnderTest) throws -> (TestClient, TestClient) {
        let alice = try node.member("alice", of: "r")
        let ann = try node.member("ann", of: "r")
        for client in [alice, ann] {
            let id = try client.send("hi", to: .user("zed"))
            try wait("a direct message stored") { client.isStored(id) }
        }
        return (alice, ann)
    }
}
