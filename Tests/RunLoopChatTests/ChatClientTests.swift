import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing

@Suite("ChatClient: typed requests, refusals, losses, presence and messages")
struct ChatClientTests {
    @Test("join, the room list, history pages and leave answer with typed values")
    func typedAnswers() async throws {
        try await onManualClockLoop { loop, clock in
            let fixture = ChatFixture(loop: loop, clock: clock)
            let (ann, _) = try fixture.online("ann")
            let (ben, benLog) = try fixture.online("ben")
            // Requests are made outside #expect: written inside one, a request's closure was seen to run
            // in place of a later call's (Swift 6.3).
            let annJoined = try fixture.answer { ann.join(room: "lobby", completion: $0) }
            let benJoined = try fixture.answer { ben.join(room: "lobby", completion: $0) }
            let attic = try fixture.answer { ann.join(room: "attic", completion: $0) }
            #expect(annJoined == .success(Room(name: "lobby", members: 1, isMember: true)))
            #expect(benJoined == .success(Room(name: "lobby", members: 2, isMember: true)))
            #expect(attic == .success(Room(name: "attic", members: 1, isMember: true)))
            let rooms = try fixture.answer { ben.rooms(completion: $0) }
            #expect(rooms == .success([Room(name: "attic", members: 1, isMember: false), Room(name: "lobby", members: 2, isMember: true)]))

            for index in 0..<5 { try ann.send("room \(index)", to: .room("lobby")) }
            try #require(try spin(fixture.loop) { benLog.messages.count == 5 })
            var pages: [[String]] = []
            var before: UInt64 = 0
            while pages.count < 5 {
                let page = try fixture.answer { ben.history(with: .room("lobby"), before: before, limit: 2, completion: $0) }.get()
                pages.append(page.messages.map(\.text))
                #expect(page.messages.allSatisfy { $0.from == "ann" && $0.recipient == .room("lobby") })
                guard let next = page.nextBefore else { break }
                #expect(next == page.messages.map(\.seq).min() && page.moreAvailable)
                before = next
            }
            #expect(pages == [["room 4", "room 3"], ["room 2", "room 1"], ["room 0"]])

            let left = try fixture.answer { ben.leave(room: "lobby", completion: $0) }
            #expect(left == .success(Room(name: "lobby", members: 1, isMember: false)))
            try fixture.tearDown()
        }
    }

    @Test("rooms() follows the server's pages to the end and completes once, with every room in order")
    func roomListFollowsPages() async throws {
        try await onManualClockLoop { loop, clock in
            var service = ChatService()
            service.settings.roomListPageSize = 2
            let fixture = ChatFixture(loop: loop, clock: clock, application: service)
            let (ann, _) = try fixture.online("ann")
            let names = ["e", "a", "d", "b", "c"]
            for name in names { _ = try fixture.answer { ann.join(room: name, completion: $0) }.get() }
            var results: [Result<[Room], ChatRequestError>] = []
            ann.rooms { results.append($0) }
            try #require(try spin(fixture.loop) { !results.isEmpty })
            try fixture.loop.run(.default, timeout: .milliseconds(30))
            #expect(results.count == 1)
            #expect(try results[0].get().map(\.name) == names.sorted())
            try fixture.tearDown()
        }
    }

    @Test("refusals are typed: tooManyRooms, a bad room name, notAMember for LEAVE and HISTORY")
    func refusals() async throws {
        try await onManualClockLoop { loop, clock in
            var settings = IMServer.Settings()
            settings.maximumRoomsPerUser = 1
            let fixture = ChatFixture(loop: loop, clock: clock, settings: settings)
            let (ann, _) = try fixture.online("ann")
            _ = try fixture.answer { ann.join(room: "one", completion: $0) }.get()
            let second = try fixture.answer { ann.join(room: "two", completion: $0) }
            let badName = try fixture.answer { ann.join(room: " padded", completion: $0) }
            let notIn = try fixture.answer { ann.leave(room: "two", completion: $0) }
            let history = try fixture.answer { ann.history(with: .room("two"), completion: $0) }
            #expect(second == .failure(.refused(.tooManyRooms)))
            #expect(badName == .failure(.refused(.badRequest)))
            #expect(notIn == .failure(.refused(.notAMember)))
            #expect(history == .failure(.refused(.notAMember)))
            try fixture.tearDown()
        }
    }

    @Test("a request whose connection drops before the answer ends in exactly one .lost")
    func lostRequest() async throws {
        try await onManualClockLoop { loop, clock in
            let fixture = ChatFixture(loop: loop, clock: clock)
            let (ann, _) = try fixture.online("ann")
            var results: [Result<Room, ChatRequestError>] = []
            ann.join(room: "lobby") { results.append($0) }
            // Before the server's loop pass reads the JOIN: the connection resets under it.
            fixture.server.abort()
            try #require(try spin(fixture.loop) { !results.isEmpty })
            try fixture.loop.run(.default, timeout: .milliseconds(100))
            #expect(results.count == 1)
            guard case .failure(.lost)? = results.first else {
                Issue.record("expected .lost, got \(results)")
                return
            }
            try fixture.tearDown()
        }
    }

    @Test("a request while not online completes with .notOnline, once closed with .closed; after the call returns, not inside it")
    func notOnline() async throws {
        try await onManualClockLoop { loop, clock in
            let fixture = ChatFixture(loop: loop, clock: clock)
            let (cid, _) = fixture.client("cid")
            var results: [Result<Room, ChatRequestError>] = []
            cid.join(room: "lobby") { results.append($0) }
            #expect(results.isEmpty, "never inside the owner's call")
            try #require(try spin(fixture.loop) { !results.isEmpty })
            #expect(results == [.failure(.notOnline)])
            cid.close()
            try #require(try spin(fixture.loop) { if case .closed = cid.state { return true } else { return false } })
            cid.join(room: "lobby") { results.append($0) }
            #expect(results.count == 1, "never inside the owner's call")
            try #require(try spin(fixture.loop) { results.count == 2 })
            #expect(results.last == .failure(.closed))
            try fixture.tearDown()
        }
    }

    @Test("presence arrives typed: a user who shares a room comes online, then goes offline")
    func presence() async throws {
        try await onManualClockLoop { loop, clock in
            let fixture = ChatFixture(loop: loop, clock: clock)
            let (ann, annLog) = try fixture.online("ann")
            _ = try fixture.answer { ann.join(room: "r", completion: $0) }.get()
            let (ben, _) = try fixture.online("ben")
            _ = try fixture.answer { ben.join(room: "r", completion: $0) }.get()
            try #require(try spin(fixture.loop) { annLog.presence.contains(PresenceChange(user: "ben", isOnline: true)) })
            ben.close()
            try #require(try spin(fixture.loop) { annLog.presence.last == PresenceChange(user: "ben", isOnline: false) })
            #expect(!annLog.presence.contains { $0.user == "ann" }, "a user's own arrival is not news to them")
            try fixture.tearDown()
        }
    }

    @Test("a direct message arrives with recipient .user(me), a room message with .room(name); both as stored")
    func recipients() async throws {
        try await onManualClockLoop { loop, clock in
            let fixture = ChatFixture(loop: loop, clock: clock)
            let (ann, annLog) = try fixture.online("ann")
            let (ben, benLog) = try fixture.online("ben")
            for chat in [ann, ben] { _ = try fixture.answer { chat.join(room: "lobby", completion: $0) }.get() }
            let toRoom = try ann.send("to all", to: .room("lobby"))
            let toBen = try ann.send("to ben", to: .user("ben"))
            try #require(try spin(fixture.loop) { benLog.messages.count == 2 && annLog.isStored(toRoom) && annLog.isStored(toBen) })
            #expect(benLog.messages.map(\.id) == [toRoom, toBen])
            #expect(benLog.messages.map(\.recipient) == [.room("lobby"), .user("ben")])
            #expect(benLog.messages.allSatisfy { $0.from == "ann" && $0.seq > 0 && $0.sentAtMilliseconds > 0 })
            let direct = try fixture.answer { ben.history(with: .user("ann"), completion: $0) }.get()
            #expect(direct.messages.map(\.text) == ["to ben"] && direct.nextBefore == nil)
            try fixture.tearDown()
        }
    }

    /// A server that answers LIST_ROOMS with the same page forever and every other request with a
    /// status code no version of the protocol has.
    struct MisbehavingApplication: IMApplicationHandler {
        func answer(_ request: IMFrame, from user: String, on server: IMServer, reply: @escaping (IMFrame) -> Void) throws(IMFrameError) {
            guard request.command == .listRooms else {
                var frame = IMFrame(command: .joinAck, serial: request.serial)
                frame.header.code = 999
                return reply(frame)
            }
            var list = IMRoomList()
            list.rooms = [IMRoomInfo(name: "a", members: 1, joined: false)]
            list.moreAvailable = true
            reply(IMFrame(command: .roomList, serial: request.serial, message: list))
        }
    }

    @Test("answers it cannot read end the request once: a room list that does not advance, an unknown status code")
    func unreadableAnswers() async throws {
        try await onManualClockLoop { loop, clock in
            let fixture = ChatFixture(loop: loop, clock: clock, application: MisbehavingApplication())
            let (ann, _) = try fixture.online("ann")
            var rooms: [Result<[Room], ChatRequestError>] = []
            ann.rooms { rooms.append($0) }
            try #require(try spin(fixture.loop) { !rooms.isEmpty })
            let joined = try fixture.answer { ann.join(room: "lobby", completion: $0) }
            #expect(rooms.count == 1)
            guard case .failure(.unreadableAnswer)? = rooms.first, case .failure(.unreadableAnswer) = joined else {
                Issue.record("expected unreadable answers, got \(rooms) and \(joined)")
                return
            }
            try fixture.tearDown()
        }
    }
}
