import RunLoopChat
import RunLoopChatCluster
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopPostgres
import RunLoopRedis
import RunLoopTesting
import Testing

/// MEMBERSHIP across nodes when a bus entry is late: the race `membershipAcrossNodes` met under load,
/// made certain, and the same lateness for the room's local members a node routes messages to. Node
/// b's store commits at once and its bus entries leave only when the test says.
@Suite("Chat cluster: JOIN and LEAVE told late by the bus", .serialized)
struct ChatClusterMembershipTests {
    @Test(
        "another node's JOIN, and its LEAVE, told after alice joined (or left and came back) on node A reach A's members from before them, never alice"
    )
    func lateBusEntries() async throws {
        try await withNodes(["a"]) { servers, nodes in
            let b = SlowBusNode(servers: servers)
            defer { b.close() }
            try wait("b's store and bus up") { b.isReady }
            let ann = try nodes[0].member("ann", of: "r")
            let alice = nodes[0].client("alice")
            try wait("alice online") { alice.isOnline }

            let bobJoined = try b.commit(join: true, "r", "bob")
            try alice.join("r")
            try wait("ann told alice joined") { ann.membership.count == 1 }
            try b.publish(.membership(user: "bob", room: "r", joined: true, seq: bobJoined.seq))
            try wait("ann told bob joined") { ann.membership.count == 2 }

            let bobLeft = try b.commit(join: false, "r", "bob")
            try alice.leave("r")
            try wait("ann told alice left") { ann.membership.count == 3 }
            try alice.join("r")
            try wait("ann told alice is back") { ann.membership.count == 4 }
            try b.publish(.membership(user: "bob", room: "r", joined: false, seq: bobLeft.seq))
            try wait("ann told bob left") { ann.membership.count == 5 }
            _ = try RunLoop.current.run(.default, timeout: .milliseconds(200))
            #expect(
                ann.membership == [
                    MembershipChange(room: "r", user: "alice", joined: true, members: 3),
                    MembershipChange(room: "r", user: "bob", joined: true, members: 3),
                    MembershipChange(room: "r", user: "alice", joined: false, members: 1),
                    MembershipChange(room: "r", user: "alice", joined: true, members: 2),
                    MembershipChange(room: "r", user: "bob", joined: false, members: 2)
                ])
            #expect(alice.membership.isEmpty, "both of bob's changes came before alice's own: \(alice.membership)")
        }
    }

    @Test(
        "alice leaves r on node B and joins it again on node A before B's LEAVE reaches A: A keeps her in r, and she gets its messages live"
    )
    func lateLeaveAfterRejoin() async throws {
        try await withNodes(["a", "c"]) { servers, nodes in
            let b = SlowBusNode(servers: servers)
            defer { b.close() }
            try wait("b's store and bus up") { b.isReady }
            let alice = try nodes[0].member("alice", of: "r")
            let ann = try nodes[0].member("ann", of: "r")
            let bob = try nodes[1].member("bob", of: "r")
            // Both tracked on A: her rooms' load answered, live or by the read that follows it.
            try bob.send("before", to: .room("r"))
            try wait("alice and ann have bob's first message") { alice.texts == ["before"] && ann.texts == ["before"] }

            let aliceLeft = try b.commit(join: false, "r", "alice")
            try alice.join("r")
            // The bus orders it before bob's next message (one room, one stream), after her join.
            try b.publish(.membership(user: "alice", room: "r", joined: false, seq: aliceLeft.seq))
            try bob.send("after", to: .room("r"))
            try wait("ann, on A with alice, has bob's next message") { ann.texts == ["before", "after"] }
            try wait("alice has it too, live: the late LEAVE is older than her join") { alice.texts == ["before", "after"] }
        }
    }
}

/// A node of the cluster reduced to its store and its bus, whose entries leave late: a JOIN or LEAVE
/// commits in the shared PostgreSQL at once, its event is published when the test calls ``publish(_:)``.
final class SlowBusNode {
    let database: ReconnectingLink<PostgresConnection>
    let store: PostgresChatStore
    let bus: ClusterBus
    /// Each room message committed here: the room's membership number at its commit, by `seq`.
    private(set) var membershipSeqs: [UInt64: UInt64] = [:]

    init(servers: SharedServers) {
        let loop = RunLoop.current
        let configuration = servers.database
        database = ReconnectingLink(policy: quickReconnect) { PostgresConnection(loop: loop, configuration: configuration) }
        store = PostgresChatStore(link: database, authentication: .open)
        bus = ClusterBus(configuration: ClusterBusConfiguration(nodeID: "b", redis: .unixSocket(servers.redis.socketPath)))
        store.onRoomMessageCommitted = { [weak self] message, number in self?.membershipSeqs[message.seq] = number }
        database.start()
        bus.start()
    }

    var isReady: Bool { database.connection != nil && bus.isPublishing }

    /// A JOIN (`join` true) or LEAVE of `user`, committed; no event published.
    func commit(join: Bool, _ room: String, _ user: String) throws -> MembershipCommit {
        var answer: Result<MembershipCommit, IMStatusCode>?
        if join { store.join(room: room, user: user, maximumRooms: nil) { answer = $0 } } else { store.leave(room: room, user: user) { answer = $0 } }
        try wait("\(user)'s change of \(room) committed") { answer != nil }
        return try #require(answer).get()
    }

    /// `text` from `sender` to `room`, committed; no event published. The stored message.
    func commit(_ text: String, from sender: String, to room: String) throws -> IMMessage {
        var answer: IMStoreResult?
        let message = IMMessage(id: "\(sender): \(text)", from: sender, recipient: .room(room), text: text, seq: 0, sentAtMilliseconds: 0)
        store.store(message, from: sender, nowMilliseconds: 1_000) { answer = $0 }
        try wait("\(sender)'s message to \(room) committed") { answer != nil }
        guard case .stored(let stored, _, _) = try #require(answer) else { throw StoreRefused(answer: try #require(answer)) }
        return stored
    }

    /// Publishes `event` and waits for Redis to take it.
    func publish(_ event: ClusterEvent) throws {
        var published: Result<Void, ClusterBusError>?
        bus.publish(event) { published = $0 }
        try wait("published") { published != nil }
        try #require(published).get()
    }

    func close() {
        bus.close()
        database.close()
    }
}

/// A store that refused what a test needed stored.
struct StoreRefused: Error {
    let answer: IMStoreResult
}
