import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@Suite("MEMBERSHIP notices: who joined or left a room, told to its other members online with the count")
struct MembershipNoticeTests {
    @Test("a JOIN and a LEAVE reach the room's other members online, typed, with the count after; not the member who changed, not another room's")
    func joinAndLeave() async throws {
        try await onManualClockLoop { loop, clock in
            let fixture = ChatFixture(loop: loop, clock: clock)
            let (ann, annLog) = try fixture.online("ann")
            let (ben, benLog) = try fixture.online("ben")
            let (cat, catLog) = try fixture.online("cat")
            _ = try fixture.answer { ann.join(room: "lobby", completion: $0) }.get()
            _ = try fixture.answer { cat.join(room: "attic", completion: $0) }.get()
            _ = try fixture.answer { ben.join(room: "lobby", completion: $0) }.get()
            try #require(try spin(fixture.loop) { !annLog.membership.isEmpty })
            #expect(annLog.membership == [MembershipChange(room: "lobby", user: "ben", joined: true, members: 2)])

            _ = try fixture.answer { ben.leave(room: "lobby", completion: $0) }.get()
            try #require(try spin(fixture.loop) { annLog.membership.count == 2 })
            #expect(annLog.membership.last == MembershipChange(room: "lobby", user: "ben", joined: false, members: 1))
            try fixture.bench.advance(by: .milliseconds(100))
            #expect(benLog.membership.isEmpty, "a member's own join and leave are answered, not announced to them")
            #expect(catLog.membership.isEmpty, "attic's member hears nothing of lobby")
            try fixture.tearDown()
        }
    }

    @Test("one loop pass: one read of a room's members for all its changes, however many members; a join and leave within the pass are not announced")
    func oneReadPerRoomAndPass() async throws {
        try await onManualClockLoop { loop, clock in
            let store = DeferredIMStore(loop: loop)
            // A room of 10,000 that is not large (LargeRoomTests: one that is).
            var settings = ChatService.Settings()
            settings.largeRoomMembers = 10_000
            let service = ChatService(settings: settings)
            let fixture = ChatFixture(loop: loop, clock: clock, application: service, store: store)
            for index in 0..<9_998 { _ = store.inner.join(room: "lobby", user: "member\(index)") }
            _ = store.inner.join(room: "lobby", user: "ann")
            let (_, annLog) = try fixture.online("ann")
            let (ben, _) = try fixture.online("ben")
            _ = try fixture.answer { ben.join(room: "lobby", completion: $0) }.get()
            try #require(try spin(fixture.loop) { !annLog.membership.isEmpty })
            #expect(annLog.membership == [MembershipChange(room: "lobby", user: "ben", joined: true, members: 10_000)])
            #expect(store.memberReads == 1, "one read for a room of 10,000")

            // Changes another node stored (a cluster's bus), several in one pass: one read, the
            // changes that still hold at its end announced in order.
            let changes = [
                ("cat", try store.inner.join(room: "lobby", user: "cat").get()),
                ("dan", try store.inner.join(room: "lobby", user: "dan").get()),
                ("member0", try store.inner.leave(room: "lobby", user: "member0").get()),
                ("dan", try store.inner.leave(room: "lobby", user: "dan").get())
            ]
            for (user, change) in changes {
                service.membershipChanged(user, room: "lobby", joined: change.room.isMember, seq: change.seq, on: fixture.server)
            }
            try #require(try spin(fixture.loop) { annLog.membership.count >= 3 })
            try fixture.bench.advance(by: .milliseconds(100))
            #expect(
                annLog.membership.dropFirst() == [
                    MembershipChange(room: "lobby", user: "cat", joined: true, members: 10_000),
                    MembershipChange(room: "lobby", user: "member0", joined: false, members: 10_000)
                ])
            #expect(store.memberReads == 2)
            try fixture.tearDown()
        }
    }
}
