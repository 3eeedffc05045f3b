import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

/// Large rooms (docs/PROTOCOL.md §8): a JOIN or LEAVE of a room past `largeRoomMembers` costs no
/// frame to its members, no snapshot of them and no read of them — what keeps filling a room of
/// 10,000 from costing a notice and a presence frame to every member per join.
@Suite("Large rooms: no MEMBERSHIP, no PRESENCE through them")
struct LargeRoomTests {
    /// What a JOIN made happen after its JOIN_ACK.
    struct AfterJoin: Sendable {
        var annPresence: [PresenceChange] = []
        var annMembership: [MembershipChange] = []
        var benPresence: [PresenceChange] = []
        var memberReads = 0
        var contactReads = 0
    }

    /// ann and cat online in `lobby`, which has 1,499 members when ben, online and in no room, joins
    /// it with the service's `largeRoomMembers`; what ann and ben heard, and the store's reads.
    private func benJoins(largeRoomMembers: Int) async throws -> AfterJoin {
        try await onManualClockLoop { loop, clock in
            let store = DeferredIMStore(loop: loop)
            var settings = ChatService.Settings()
            settings.largeRoomMembers = largeRoomMembers
            let fixture = ChatFixture(loop: loop, clock: clock, application: ChatService(settings: settings), store: store)
            for index in 0..<1_497 { _ = store.inner.join(room: "lobby", user: "member\(index)") }
            for user in ["ann", "cat"] { _ = store.inner.join(room: "lobby", user: user) }
            let (_, annLog) = try fixture.online("ann")
            _ = try fixture.online("cat")
            let (ben, benLog) = try fixture.online("ben")
            try fixture.bench.advance(by: .milliseconds(100))
            annLog.presence = []
            benLog.presence = []
            let (memberReads, contactReads) = (store.memberReads, store.contactReads)
            let joined = try fixture.answer { ben.join(room: "lobby", completion: $0) }.get()
            #expect(joined == Room(name: "lobby", members: 1_500, isMember: true))
            try fixture.bench.advance(by: .milliseconds(100))
            let heard = AfterJoin(
                annPresence: annLog.presence, annMembership: annLog.membership, benPresence: benLog.presence,
                memberReads: store.memberReads - memberReads, contactReads: store.contactReads - contactReads)
            try fixture.tearDown()
            return heard
        }
    }

    @Test("a JOIN that makes a room large: no frame to its members, no snapshot for the newcomer, no read of the room or of contacts")
    func joinOfALargeRoomCostsNothingPerMember() async throws {
        let heard = try await benJoins(largeRoomMembers: 1_499)
        #expect(heard.annMembership.isEmpty)
        #expect(heard.annPresence.isEmpty)
        #expect(heard.benPresence.isEmpty)
        #expect(heard.memberReads == 0)
        #expect(heard.contactReads == 0)
    }

    @Test("the same JOIN in a room at the limit: the members hear of it, the newcomer gets the snapshot")
    func joinAtTheLimitIsAnnounced() async throws {
        let heard = try await benJoins(largeRoomMembers: 1_500)
        #expect(heard.annMembership == [MembershipChange(room: "lobby", user: "ben", joined: true, members: 1_500)])
        #expect(heard.annPresence == [PresenceChange(user: "ben", isOnline: true)])
        #expect(heard.benPresence.sorted { $0.user < $1.user } == ["ann", "cat"].map { PresenceChange(user: $0, isOnline: true) })
        #expect(heard.memberReads == 1)
    }

    @Test("a room that grew large stops announcing and stops carrying presence; the LEAVE that brings it back to the limit is announced")
    func growingPastTheLimitAndBack() async throws {
        try await onManualClockLoop { loop, clock in
            var settings = ChatService.Settings()
            settings.largeRoomMembers = 3
            let fixture = ChatFixture(loop: loop, clock: clock, application: ChatService(settings: settings))
            let (ann, annLog) = try fixture.online("ann")
            let (ben, _) = try fixture.online("ben")
            let (cat, _) = try fixture.online("cat")
            for chat in [ann, ben, cat] { _ = try fixture.answer { chat.join(room: "lobby", completion: $0) }.get() }
            try fixture.bench.advance(by: .milliseconds(100))
            #expect(annLog.membership.map(\.user) == ["ben", "cat"])
            #expect(Set(annLog.presence) == [PresenceChange(user: "ben", isOnline: true), PresenceChange(user: "cat", isOnline: true)])

            let (dan, danLog) = try fixture.online("dan")
            #expect(try fixture.answer { dan.join(room: "lobby", completion: $0) }.get().members == 4)
            try fixture.bench.advance(by: .milliseconds(100))
            #expect(annLog.membership.count == 2, "dan's JOIN made lobby large: not announced")
            #expect(!annLog.presence.contains { $0.user == "dan" })
            #expect(danLog.presence.isEmpty, "no snapshot of a large room")

            // Members of a large room only: not each other's contacts, so ben's going is not told.
            let presenceBefore = annLog.presence.count
            ben.close()
            try #require(try spin(fixture.loop) { !fixture.server.onlineUsers.contains("ben") })
            try fixture.bench.advance(by: .milliseconds(100))
            #expect(annLog.presence.count == presenceBefore)

            #expect(try fixture.answer { dan.leave(room: "lobby", completion: $0) }.get().members == 3)
            try #require(try spin(fixture.loop) { annLog.membership.count == 3 })
            #expect(annLog.membership.last == MembershipChange(room: "lobby", user: "dan", joined: false, members: 3))
            try fixture.tearDown()
        }
    }

    @Test("the memory store's contacts leave out rooms over the limit, keep those at it and direct conversations")
    func memoryStoreContacts() throws {
        let store = InMemoryIMStore()
        for user in ["ann", "ben", "cat", "dan"] { _ = store.join(room: "big", user: user) }
        for user in ["ann", "ben"] { _ = store.join(room: "small", user: user) }
        let message = IMMessage(id: "d", from: "", recipient: .user("zed"), text: "hi", seq: 0, sentAtMilliseconds: 0)
        _ = store.store(message, from: "ann", nowMilliseconds: 1)
        #expect(try store.contacts(of: "ann", roomsOfAtMost: 3).get() == ["ben", "zed"])
        #expect(try store.contacts(of: "ann", roomsOfAtMost: 4).get() == ["ben", "cat", "dan", "zed"])
    }
}
