import RunLoopChat
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

/// Rooms, history and logins against a real PostgreSQL.
@Suite struct RoomStoreTests {
    @Test("join, join again, the room cap, leave, leave again")
    func joinAndLeave() async throws {
        let database = try await ChatDatabase.start()
        let results = try await onLoopThread {
            let store = try database.store()
            return [
                try store.joining("lobby", "alice"),
                try store.joining("lobby", "bob"),
                try store.joining("lobby", "bob", maximumRooms: 1),
                try store.joining("other", "bob", maximumRooms: 1),
                try store.joining(" bad name", "bob"),
                try store.leaving("lobby", "bob"),
                try store.leaving("lobby", "bob")
            ]
        }
        #expect(results[0] == .success(Room(name: "lobby", members: 1, isMember: true)))
        #expect(results[1] == .success(Room(name: "lobby", members: 2, isMember: true)))
        #expect(results[2] == .success(Room(name: "lobby", members: 2, isMember: true)))
        #expect(results[3] == .failure(.tooManyRooms))
        #expect(results[4] == .failure(.badRequest))
        #expect(results[5] == .success(Room(name: "lobby", members: 1, isMember: false)))
        #expect(results[6] == .failure(.notAMember))
    }

    @Test("contacts leave out a room over the limit (docs/PROTOCOL.md §8), keep one at it and direct conversations")
    func contactsLeaveOutLargeRooms() async throws {
        let database = try await ChatDatabase.start()
        let (atThree, atFour) = try await onLoopThread {
            let store = try database.store()
            for user in ["ann", "ben", "cat", "dan"] { _ = try store.joining("big", user).get() }
            for user in ["ann", "ben"] { _ = try store.joining("small", user).get() }
            #expect(try waitFor(store.loop) { store.createAccount("zed", passwordHash: "h", completion: $0) }.get())
            _ = try store.stored("d", id: "d", from: "ann", to: .user("zed"))
            return (
                try waitFor(store.loop) { store.contacts(of: "ann", roomsOfAtMost: 3, completion: $0) }.get(),
                try waitFor(store.loop) { store.contacts(of: "ann", roomsOfAtMost: 4, completion: $0) }.get()
            )
        }
        #expect(atThree == ["ben", "zed"])
        #expect(atFour == ["ben", "cat", "dan", "zed"])
    }

    /// Nodes of a cluster create a room when its first member joins, each on its own connection: the
    /// first JOINs of one new room on several nodes at once all succeed, and the room is made once.
    @Test("first joins of one new room on three connections at once all succeed, one room made")
    func concurrentFirstJoins() async throws {
        let database = try await ChatDatabase.start()
        let rooms = (1...30).map { "room\($0)" }
        let (results, conversations) = try await onLoopThread {
            let stores = try (0..<3).map { _ in try database.store() }
            var results: [Result<MembershipCommit, IMStatusCode>] = []
            for room in rooms {
                for (index, store) in stores.enumerated() {
                    store.join(room: room, user: "user\(index)", maximumRooms: nil) { results.append($0) }
                }
            }
            try spin(stores[0].loop) { results.count == rooms.count * stores.count }
            let rows = try execute(try database.connect(), "SELECT count(*) FROM conversations WHERE room IS NOT NULL")
            return (results, rows.int(0, 0))
        }
        let refused = results.filter { result in
            guard case .success(let commit) = result else { return true }
            return !commit.room.isMember
        }
        #expect(refused.isEmpty, "\(refused)")
        #expect(conversations == rooms.count)
    }

    @Test("rooms page in UTF-8 byte order after a name, with counts; empty rooms are not listed")
    func roomPaging() async throws {
        let database = try await ChatDatabase.start()
        let (first, second, all) = try await onLoopThread {
            let store = try database.store()
            for room in ["b", "a", "é", "Z", "c"] { _ = try store.joining(room, "alice") }
            _ = try store.joining("b", "bob")
            _ = try store.leaving("c", "alice")
            return (try store.roomList("bob", limit: 2), try store.roomList("bob", after: "a", limit: 2), try store.roomList("bob"))
        }
        #expect(first == [Room(name: "Z", members: 1, isMember: false), Room(name: "a", members: 1, isMember: false)])
        #expect(second == [Room(name: "b", members: 2, isMember: true), Room(name: "é", members: 1, isMember: false)])
        #expect(all.map(\.name) == ["Z", "a", "b", "é"])
    }

    @Test("a new member gets no old messages as deliveries; history shows them, a page at a time, to members only")
    func joinCursorAndHistory() async throws {
        let database = try await ChatDatabase.start()
        let (inbox, pages, stranger, direct) = try await onLoopThread {
            let store = try database.store()
            _ = try store.joining("lobby", "alice")
            for index in 1...5 { _ = try store.stored("old \(index)", id: "o\(index)", from: "alice", to: .room("lobby")) }
            _ = try store.joining("lobby", "bob")
            _ = try store.stored("new", id: "n1", from: "alice", to: .room("lobby"))
            let inbox = try store.inbox("bob")
            let first = try store.page(.room("lobby"), for: "bob", limit: 4).get()
            let second = try store.page(.room("lobby"), before: first.nextBefore ?? 0, for: "bob", limit: 4).get()
            let stranger = try store.page(.room("lobby"), for: "mallory", limit: 4)
            _ = try store.stored("to bob", id: "d1", from: "alice", to: .user("bob"))
            _ = try store.stored("to alice", id: "d2", from: "bob", to: .user("alice"))
            let direct = try store.page(.user("alice"), for: "bob", limit: 10).get()
            return (inbox, [first, second], stranger, direct)
        }
        #expect(inbox.map(\.id) == ["n1"])
        #expect(pages[0].messages.map(\.id) == ["n1", "o5", "o4", "o3"])
        #expect(pages[0].nextBefore == pages[0].messages.last?.seq)
        #expect(pages[1].messages.map(\.id) == ["o2", "o1"])
        #expect(pages[1].nextBefore == nil)
        #expect(stranger == .failure(.notAMember))
        #expect(direct.messages.map(\.id) == ["d2", "d1"])
    }

    @Test("a room message is stored once for all its members and each recipient is told, the sender excluded")
    func roomRecipients() async throws {
        let database = try await ChatDatabase.start()
        let (result, inboxes, rows) = try await onLoopThread {
            let store = try database.store()
            for user in ["carol", "alice", "bob"] { _ = try store.joining("lobby", user) }
            let result = try store.send("hello", id: "h", from: "alice", to: .room("lobby"))
            // Bob answers without having acknowledged Alice's message: his cursor stays behind it.
            _ = try store.stored("hi alice", id: "b", from: "bob", to: .room("lobby"))
            let inboxes = try ["alice", "bob", "carol"].map { try store.inbox($0).map(\.id) }
            return (result, inboxes, try execute(try database.connect(), "SELECT count(*) FROM messages").int(0, 0))
        }
        guard case .stored(let message, let recipients, true) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(recipients == ["bob", "carol"])
        #expect(message.conversationSeq == 1)
        #expect(rows == 2)
        // Alice had caught up: her cursor followed her message, so only Bob's answer waits for her.
        #expect(inboxes == [["b"], ["h"], ["h", "b"]])
    }

    @Test("accounts: a name in any case logs in as its account with the right password, not with a wrong one")
    func accounts() async throws {
        let database = try await ChatDatabase.start()
        let (created, again, right, wrong, unknown) = try await onLoopThread {
            let store = try database.store(authentication: .accounts)
            let hash = PasswordHasher.forTests.hash("secret")
            let created = try waitFor(store.loop) { store.createAccount("Alice", passwordHash: hash, completion: $0) }.get()
            let again = try waitFor(store.loop) { store.createAccount("ALICE", passwordHash: hash, completion: $0) }.get()
            return (created, again, try store.login("ALICE", "secret"), try store.login("alice", "guess"), try store.login("nobody", "secret"))
        }
        #expect(created && !again)
        #expect(right == .acceptedAs(user: "alice"))
        #expect(wrong == .refused(.authenticationFailed, reason: "unknown user or wrong password"))
        #expect(unknown == wrong)
    }
}
