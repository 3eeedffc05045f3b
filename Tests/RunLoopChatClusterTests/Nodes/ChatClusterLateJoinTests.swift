import RunLoopChat
import RunLoopChatCluster
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing
import ThrowawayServers

/// A JOIN whose bus entry reaches a node after the user's rooms were read there, for a room they had
/// left before that read: the node reads the store before it routes the room's messages to them.
/// Node b (a ``SlowBusNode``) commits at once and publishes when the test says.
@Suite("Chat cluster: a JOIN told late for a room left before the login", .serialized)
struct ChatClusterLateJoinTests {
    @Test(
        "alice joins r and leaves it before logging in on node A, and the JOIN is told to A after her login: she gets none of r's messages; a JOIN after her login gives her them"
    )
    func lateJoinOfARoomLeftBeforeTheLogin() async throws {
        try await withNodes(["a", "c"]) { servers, nodes in
            let b = SlowBusNode(servers: servers)
            defer { b.close() }
            try wait("b's store and bus up") { b.isReady }
            let ann = try nodes[0].member("ann", of: "r")
            let bob = try nodes[1].member("bob", of: "r")

            let joined = try b.commit(join: true, "r", "alice")
            let left = try b.commit(join: false, "r", "alice")
            try b.publish(.membership(user: "alice", room: "r", joined: false, seq: left.seq))
            let alice = nodes[0].client("alice")
            try wait("alice online on A") { alice.isOnline }
            try b.publish(.membership(user: "alice", room: "r", joined: true, seq: joined.seq))
            // After the JOIN on the room's stream: A routes it as the JOIN left it.
            try bob.send("after her leave", to: .room("r"))
            try wait("ann, on A, has bob's message") { ann.texts == ["after her leave"] }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
            #expect(alice.texts.isEmpty, "a message of a room she left")

            let back = try b.commit(join: true, "r", "alice")
            try b.publish(.membership(user: "alice", room: "r", joined: true, seq: back.seq))
            try bob.send("after her return", to: .room("r"))
            try wait("alice, back in r, has bob's next message") { alice.texts == ["after her return"] }
            #expect(ann.texts == ["after her leave", "after her return"])
        }
    }

    @Test(
        "the check of a late JOIN fails while PostgreSQL is stopped: asked again after the restart, and the room's message that came meanwhile reaches alice from the store"
    )
    func checkAskedAgain() async throws {
        try await withNodes(["a"]) { servers, nodes in
            let b = SlowBusNode(servers: servers)
            defer { b.close() }
            try wait("b's store and bus up") { b.isReady }
            let ann = try nodes[0].member("ann", of: "r")
            let alice = nodes[0].client("alice")
            try wait("alice online on A") { alice.isOnline }
            // Her rooms' load answered: A's store answers in order on its one connection. Nothing
            // here has her inbox read again, so the room's message can only reach her through the check.
            let hello = try alice.send("hello", to: .user("zed"))
            try wait("alice's message stored") { alice.isStored(hello) }
            // Ann's session knows where r stands: the next message of r reaches her live, no read.
            _ = try b.commit(join: true, "r", "bob")
            let first = try b.commit("before alice's join", from: "bob", to: "r")
            try b.publish(.message(first))
            try wait("ann has the first message") { ann.texts == ["before alice's join"] }

            let joined = try b.commit(join: true, "r", "alice")
            let message = try b.commit("while she was checked", from: "bob", to: "r")
            servers.postgres.stop()
            try b.publish(.membership(user: "alice", room: "r", joined: true, seq: joined.seq))
            try wait("A could not check") { nodes[0].logs.records.get().contains { $0.message.contains("standing of alice in r") } }
            try b.publish(.message(message))
            try wait("ann, on A, has the next message: it came while alice's check was wanted") {
                ann.texts == ["before alice's join", "while she was checked"]
            }
            #expect(alice.texts.isEmpty)
            try servers.postgres.restart()
            try wait("alice has the message") { alice.texts == ["while she was checked"] }
        }
    }
}
