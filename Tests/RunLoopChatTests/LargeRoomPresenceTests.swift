import RunLoopIM
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopChat
@testable import RunLoopIMCore

/// What a client knows of a large room (docs/PROTOCOL.md §8): the server announces its large-room
/// size in LOGIN_ACK, and the client judges each room by the last count it heard, so an application
/// can show the members' presence as unknown there instead of letting silence read as "offline".
@Suite("Large rooms as a client sees them: the announced size, the last known count")
struct LargeRoomPresenceTests {
    /// A chat server whose service calls a room of more than `size` members large.
    private static func fixture(_ loop: RunLoop, _ clock: ManualClock, size: Int) -> ChatFixture {
        var settings = ChatService.Settings()
        settings.largeRoomMembers = size
        return ChatFixture(loop: loop, clock: clock, application: ChatService(settings: settings))
    }

    @Test("LOGIN_ACK announces the service's size and the chat client exposes it, not before the login")
    func sizeIsAnnounced() async throws {
        try await onManualClockLoop { loop, clock in
            let fixture = Self.fixture(loop, clock, size: 3)
            let (ann, _) = fixture.client("ann")
            #expect(ann.largeRoomMembers == nil, "nothing is known before the login")
            try #require(try spin(fixture.loop) { ann.state == .online })
            #expect(ann.largeRoomMembers == 3 && ann.connection.largeRoomMembers == 3)
            try fixture.tearDown()
        }
    }

    @Test("an application without large rooms, or none, announces 0; a new application's size reaches the logins after it")
    func sizeFollowsTheApplication() async throws {
        try await onLoopThread {
            let server = IMServer(store: InMemoryIMStore())
            func announced(_ user: String) -> UInt32? {
                let link = MemoryLinkPeer()
                server.adopt(link.serverEnd)
                return link.logIn(user).flatMap { try? $0.decode(IMLoginResponse.self).limits.largeRoomMembers }
            }
            #expect(announced("ann") == 0, "no application")
            server.applicationHandler = RoomlessApplication()
            #expect(announced("ben") == 0, "an application without the rule")
            server.applicationHandler = ChatService()
            #expect(announced("cat") == 1_000)
            var settings = ChatService.Settings()
            settings.largeRoomMembers = 40
            server.applicationHandler = ChatService(settings: settings)
            #expect(announced("dan") == 40)
            server.shutdown()
        }
    }

    @Test(
        "a room is large while its last known count is over the size: a JOIN answer, the room list and a LEAVE's MEMBERSHIP switch it, each change reported once, before the answer or notice that brought it"
    )
    func lastKnownCountDecides() async throws {
        try await onManualClockLoop { loop, clock in
            let fixture = Self.fixture(loop, clock, size: 3)
            var clients: [String: ChatClient] = [:]
            var changes: [String: [LargeRoomChange]] = [:]
            // What each client's own callbacks saw of the verdict: it must already hold there.
            var seenInMembership: [Bool] = []
            for user in ["ann", "ben", "cat", "dan"] {
                let (chat, _) = try fixture.online(user)
                clients[user] = chat
                chat.onLargeRoomChange = { _, change in changes[user, default: []].append(change) }
            }
            let ann = try #require(clients["ann"])
            let dan = try #require(clients["dan"])
            ann.onMembership = { chat, change in seenInMembership.append(chat.isLarge(room: change.room)) }
            for user in ["ann", "ben", "cat"] {
                let chat = try #require(clients[user])
                _ = try fixture.answer { chat.join(room: "town", completion: $0) }.get()
            }
            try #require(try spin(fixture.loop) { ann.lastKnownMembers(of: "town") == 3 })
            #expect(changes.isEmpty, "three members of a size of 3: no room is large")
            #expect(!ann.isLarge(room: "town"))

            // dan's join makes it 4: his answer says so; ann hears nothing (no MEMBERSHIP in a large room).
            var largeInCompletion: Bool?
            let joined = try fixture.answer { completion in
                dan.join(room: "town") { result in
                    largeInCompletion = dan.isLarge(room: "town")
                    completion(result)
                }
            }
            #expect(joined == .success(Room(name: "town", members: 4, isMember: true)))
            #expect(largeInCompletion == true)
            #expect(changes["dan"] == [LargeRoomChange(room: Room(name: "town", members: 4, isMember: true), isLarge: true)])
            try fixture.bench.advance(by: .milliseconds(100))
            #expect(!ann.isLarge(room: "town") && ann.lastKnownMembers(of: "town") == 3, "ann's last known count is still 3")

            // ann reads the room list: the count of 4 makes it large for her too.
            let rooms = try fixture.answer { ann.rooms(completion: $0) }.get()
            #expect(rooms == [Room(name: "town", members: 4, isMember: true)])
            #expect(changes["ann"] == [LargeRoomChange(room: Room(name: "town", members: 4, isMember: true), isLarge: true)])
            #expect(ann.isLarge(room: "town"))
            _ = try fixture.answer { ann.rooms(completion: $0) }.get()
            #expect(changes["ann"]?.count == 1, "the same verdict again is no change")

            // dan leaves: 3 again, announced by his LEAVE; ann's verdict switches back before onMembership runs.
            let left = try fixture.answer { dan.leave(room: "town", completion: $0) }.get()
            #expect(left == Room(name: "town", members: 3, isMember: false))
            #expect(changes["dan"]?.last == LargeRoomChange(room: Room(name: "town", members: 3, isMember: false), isLarge: false))
            try #require(try spin(fixture.loop) { changes["ann"]?.count == 2 })
            #expect(changes["ann"]?.last == LargeRoomChange(room: Room(name: "town", members: 3, isMember: true), isLarge: false))
            #expect(seenInMembership.last == false && !ann.isLarge(room: "town"))
            #expect(changes["ben"] == nil && changes["cat"] == nil, "ben and cat heard no count over 3")
            try fixture.tearDown()
        }
    }

    @Test("the verdicts follow the size a login announces; rooms never heard of and sizes of none are not large")
    func sizeChangesVerdicts() {
        var rooms = LargeRooms()
        // Each step outside #expect: it mutates the value, which #expect's expansion cannot.
        let withoutSize = rooms.note(Room(name: "a", members: 5_000, isMember: true))
        #expect(!withoutSize, "without a size no room is large")
        #expect(!rooms.isLarge("a") && !rooms.isLarge("never heard of"))
        let sized = rooms.setSize(1_000)
        #expect(sized == [Room(name: "a", members: 5_000, isMember: true)] && rooms.isLarge("a"))
        let atSize = rooms.note(Room(name: "b", members: 1_000, isMember: false))
        #expect(!atSize, "at the size a room is not large")
        let overSize = rooms.note(Room(name: "b", members: 1_001, isMember: false))
        #expect(overSize)
        let sameSize = rooms.setSize(1_000)
        #expect(sameSize.isEmpty, "the same size again changes nothing")
        let larger = rooms.setSize(2_000)
        #expect(larger.map(\.name) == ["b"])
        let none = rooms.setSize(nil)
        #expect(none.map(\.name) == ["a"])
        #expect(!rooms.isLarge("a") && rooms.lastHeard(of: "a")?.members == 5_000)
    }
}

/// An application that keeps the protocol's default: no large rooms.
private struct RoomlessApplication: IMApplicationHandler {
    func answer(_ request: IMFrame, from user: String, on server: IMServer, reply: @escaping (IMFrame) -> Void) throws(IMFrameError) {
        reply(IMFrame(command: .joinAck, serial: request.serial, code: .internalError))
    }
}
