import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopChat

/// MEMBERSHIP notices follow the room's membership order (``MembershipCommit``), not the order they are
/// made in: a change that precedes a member's own join never reaches them, however late it is told —
/// another node's change the bus brings after the member's JOIN, or a JOIN committed but not yet
/// answered when the pass reads the room.
@Suite("MEMBERSHIP in the room's membership order")
struct MembershipOrderTests {
    typealias Online = (ChatClient, ChatRecorder)

    /// ann and alice online on a chat server over the memory store, which the test also writes to as
    /// another node would, telling its changes as that node's bus would (``ChatService/membershipChanged(_:room:joined:seq:on:)``).
    static func withAnnAndAlice(
        _ body: @escaping @Sendable (ChatFixture, InMemoryIMStore, ChatService, Online, Online) throws -> Void
    ) async throws {
        try await onManualClockLoop { loop, clock in
            let store = InMemoryIMStore()
            let service = ChatService()
            let fixture = ChatFixture(loop: loop, clock: clock, application: service, store: store)
            try body(fixture, store, service, try fixture.online("ann"), try fixture.online("alice"))
            try fixture.tearDown()
        }
    }

    @Test("another node's JOIN told after alice joined here reaches the members from before it, not alice, whose JOIN_ACK counted it")
    func lateJoinSkipsLaterJoiner() async throws {
        try await Self.withAnnAndAlice { fixture, store, service, ann, alice in
            let ((ann, annLog), (alice, aliceLog)) = (ann, alice)
            _ = try fixture.answer { ann.join(room: "r", completion: $0) }.get()
            // bob joins on node B; its bus entry is still on its way when alice joins here.
            let bobJoined = try store.join(room: "r", user: "bob").get()
            let aliceJoined = try fixture.answer { alice.join(room: "r", completion: $0) }.get()
            #expect(aliceJoined == Room(name: "r", members: 3, isMember: true), "alice's JOIN_ACK counts bob")
            try #require(try spin(fixture.loop) { annLog.membership.count == 1 })
            service.membershipChanged("bob", room: "r", joined: true, seq: bobJoined.seq, on: fixture.server)
            try #require(try spin(fixture.loop) { annLog.membership.count == 2 })
            try fixture.bench.advance(by: .milliseconds(100))
            #expect(
                annLog.membership == [
                    MembershipChange(room: "r", user: "alice", joined: true, members: 3),
                    MembershipChange(room: "r", user: "bob", joined: true, members: 3)
                ])
            #expect(aliceLog.membership.isEmpty, "bob joined before alice: \(aliceLog.membership)")
        }
    }

    @Test("changes told together out of order: announced in the room's order, each member getting those older than their join")
    func lateChangesTogether() async throws {
        try await Self.withAnnAndAlice { fixture, store, service, ann, alice in
            let ((ann, annLog), (alice, aliceLog)) = (ann, alice)
            _ = try fixture.answer { ann.join(room: "r", completion: $0) }.get()
            let bobJoined = try store.join(room: "r", user: "bob").get()
            _ = try fixture.answer { alice.join(room: "r", completion: $0) }.get()
            try #require(try spin(fixture.loop) { annLog.membership.count == 1 })
            let carolJoined = try store.join(room: "r", user: "carol").get()
            service.membershipChanged("carol", room: "r", joined: true, seq: carolJoined.seq, on: fixture.server)
            service.membershipChanged("bob", room: "r", joined: true, seq: bobJoined.seq, on: fixture.server)
            try #require(try spin(fixture.loop) { annLog.membership.count == 3 && !aliceLog.membership.isEmpty })
            try fixture.bench.advance(by: .milliseconds(100))
            let bob = MembershipChange(room: "r", user: "bob", joined: true, members: 4)
            let carol = MembershipChange(room: "r", user: "carol", joined: true, members: 4)
            #expect(annLog.membership.dropFirst() == [bob, carol])
            #expect(aliceLog.membership == [carol], "bob joined before alice, carol after")
        }
    }

    @Test("a LEAVE told after alice left and joined again reaches the members from before it, not alice; a change undone since reaches nobody")
    func lateLeaveSkipsRejoiner() async throws {
        try await Self.withAnnAndAlice { fixture, store, service, ann, alice in
            let ((ann, annLog), (alice, aliceLog)) = (ann, alice)
            for user in ["carol", "dan"] { _ = try store.join(room: "r", user: user).get() }
            _ = try fixture.answer { ann.join(room: "r", completion: $0) }.get()
            _ = try fixture.answer { alice.join(room: "r", completion: $0) }.get()
            try #require(try spin(fixture.loop) { annLog.membership.count == 1 })
            // Elsewhere carol leaves, dan leaves and comes back; here alice leaves, then joins again.
            let carolLeft = try store.leave(room: "r", user: "carol").get()
            let danLeft = try store.leave(room: "r", user: "dan").get()
            _ = try store.join(room: "r", user: "dan").get()
            _ = try fixture.answer { alice.leave(room: "r", completion: $0) }.get()
            try #require(try spin(fixture.loop) { annLog.membership.count == 2 })
            _ = try fixture.answer { alice.join(room: "r", completion: $0) }.get()
            try #require(try spin(fixture.loop) { annLog.membership.count == 3 })
            service.membershipChanged("carol", room: "r", joined: false, seq: carolLeft.seq, on: fixture.server)
            service.membershipChanged("dan", room: "r", joined: false, seq: danLeft.seq, on: fixture.server)
            try #require(try spin(fixture.loop) { annLog.membership.count == 4 })
            try fixture.bench.advance(by: .milliseconds(100))
            #expect(
                annLog.membership == [
                    MembershipChange(room: "r", user: "alice", joined: true, members: 4),
                    MembershipChange(room: "r", user: "alice", joined: false, members: 2),
                    MembershipChange(room: "r", user: "alice", joined: true, members: 3),
                    MembershipChange(room: "r", user: "carol", joined: false, members: 3)
                ], "dan's leave is undone: he is back, and his JOIN's own notice says so")
            #expect(aliceLog.membership.isEmpty, "carol left before alice came back: \(aliceLog.membership)")
        }
    }

    @Test("one node: a JOIN committed but not answered yet when the pass reads the room is not told of the change before it")
    func unansweredJoinAtTheRead() async throws {
        try await onManualClockLoop { loop, clock in
            let store = DeferredIMStore(loop: loop, writeDelay: .milliseconds(50))
            let fixture = ChatFixture(loop: loop, clock: clock, store: store)
            _ = store.inner.join(room: "r", user: "ann")
            let (_, annLog) = try fixture.online("ann")
            let (bob, bobLog) = try fixture.online("bob")
            let (alice, aliceLog) = try fixture.online("alice")
            var answers: [Result<Room, ChatRequestError>] = []
            bob.join(room: "r") { answers.append($0) }
            try fixture.bench.advance(by: .milliseconds(20))
            alice.join(room: "r") { answers.append($0) }
            // bob's answer (and his notice's read of the room, alice in it) comes before alice's.
            try #require(try spin(fixture.loop) { annLog.membership.count == 2 })
            try fixture.bench.advance(by: .milliseconds(100))
            #expect(
                annLog.membership == [
                    MembershipChange(room: "r", user: "bob", joined: true, members: 3),
                    MembershipChange(room: "r", user: "alice", joined: true, members: 3)
                ])
            #expect(bobLog.membership == [MembershipChange(room: "r", user: "alice", joined: true, members: 3)])
            #expect(aliceLog.membership.isEmpty, "bob joined before alice: \(aliceLog.membership)")
            #expect(answers.count == 2)
            try fixture.tearDown()
        }
    }

    @Test("a pass's changes of one member, noted out of order, are put in order; the latest is news only to those who last knew otherwise")
    func historyOfOnePass() throws {
        var changes = MembershipChanges()
        let firsts = [
            changes.note("bob", room: "r", joined: false, seq: 8), changes.note("bob", room: "r", joined: true, seq: 5),
            changes.note("bob", room: "r", joined: true, seq: 5)
        ]
        #expect(firsts == [true, false, false], "only the pass's first change schedules its announcement")
        let drained = changes.drain()
        #expect(changes.isEmpty)
        let bob = try #require(drained.first?.histories.first)
        #expect(bob.changes.map(\.seq) == [5, 8] && bob.last.seq == 8 && !bob.last.joined, "in order; the one told twice once")
        func member(_ name: String, _ joinedSeq: UInt64) -> RoomMember { RoomMember(name: name, joinedSeq: joinedSeq) }
        #expect(!bob.isOwed(to: member("ann", 2)), "there before bob came and went: no news")
        #expect(bob.isOwed(to: member("cat", 6)), "joined while bob was in: told he left")
        #expect(!bob.isOwed(to: member("dan", 9)), "joined after he left")
        #expect(!bob.isOwed(to: member("bob", 0)))
        #expect(bob.holds(now: nil))
        #expect(!bob.holds(now: member("bob", 9)), "back since: his JOIN is the news")
    }
}
