import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

@testable import RunLoopChatPostgres

/// Schema 4: each room numbers its joins and leaves under its row's lock (``MembershipCommit``), so the
/// numbers follow commit order across nodes, and each member keeps their join's number.
@Suite struct PostgresMembershipNumberTests {
    @Test("joins and leaves are numbered per room; a member keeps their join's number; a refused leave takes none")
    func numbering() async throws {
        let database = try await ChatDatabase.start()
        let (commits, refused, members) = try await onLoopThread {
            let store = try database.store()
            let commits = [
                try store.committing(join: true, "town", "ann"), try store.committing(join: true, "town", "ben"),
                try store.committing(join: true, "town", "ben"), try store.committing(join: false, "town", "ben"),
                try store.committing(join: true, "attic", "cat"), try store.committing(join: true, "town", "cat")
            ]
            let refused = try store.committing(join: false, "town", "dan")
            let next = try store.committing(join: true, "town", "dan")
            return (commits.map { (try? $0.get())?.seq } + [try? next.get().seq], refused, try store.members("town"))
        }
        #expect(commits == [1, 2, 3, 4, 1, 5, 6])
        #expect(refused == .failure(.notAMember))
        #expect(members == [RoomMember(name: "ann", joinedSeq: 1), RoomMember(name: "cat", joinedSeq: 5), RoomMember(name: "dan", joinedSeq: 6)])
    }

    @Test("a JOIN refused for too many rooms takes no number: the room's next change has the next one")
    func refusedJoinTakesNoNumber() async throws {
        let database = try await ChatDatabase.start()
        let (isRefused, next) = try await onLoopThread {
            let store = try database.store()
            _ = try store.committing(join: true, "town", "ann").get()
            _ = try store.committing(join: true, "attic", "ben").get()
            let refused = try store.committing(join: true, "attic", "ann", maximumRooms: 1)
            let next = try store.committing(join: true, "attic", "cat").get()
            return ((try? refused.get()) == nil, next.seq)
        }
        #expect(isRefused)
        #expect(next == 2)
    }

    @Test("a user's rooms are read with the number of the join that made them a member, direct conversations left out")
    func roomsOfUser() async throws {
        let database = try await ChatDatabase.start()
        let rooms = try await onLoopThread {
            let store = try database.store()
            for (join, room, user) in [
                (true, "town", "ann"), (true, "town", "ben"), (true, "attic", "ben"), (true, "attic", "ann"),
                (true, "town", "ann"), (false, "attic", "ann"), (true, "attic", "ann")
            ] {
                _ = try store.committing(join: join, room, user).get()
            }
            _ = try store.stored("hi", id: "d1", from: "ann", to: .user("ben"))
            return (try store.roomJoins("ann"), try store.roomJoins("ben"), try store.roomJoins("cat"))
        }
        #expect(
            rooms.0 == ["attic": RoomJoin(joinedSeq: 4, roomSeq: 4), "town": RoomJoin(joinedSeq: 1, roomSeq: 3)],
            "a repeated join keeps the first, and takes the room's next number (it is told as any join)")
        #expect(rooms.1 == ["attic": RoomJoin(joinedSeq: 1, roomSeq: 4), "town": RoomJoin(joinedSeq: 2, roomSeq: 3)])
        #expect(rooms.2.isEmpty)
    }

    @Test(
        "a new room message is told with the room's membership number at its commit — the changes before it counted, none after; not a resend, not a direct message"
    )
    func messageMembershipNumber() async throws {
        let database = try await ChatDatabase.start()
        let told = try await onLoopThread {
            let store = try database.store()
            var told: [(String, UInt64)] = []
            store.onRoomMessageCommitted = { message, number in told.append((message.id, number)) }
            _ = try store.committing(join: true, "town", "ann").get()
            _ = try store.committing(join: true, "town", "ben").get()
            _ = try store.stored("one", id: "m1", from: "ann", to: .room("town"))
            _ = try store.committing(join: false, "town", "ben").get()
            _ = try store.stored("two", id: "m2", from: "ann", to: .room("town"))
            _ = try store.stored("two", id: "m2", from: "ann", to: .room("town"))
            _ = try store.stored("hi", id: "d1", from: "ann", to: .user("ben"))
            return told
        }
        #expect(told.map(\.0) == ["m1", "m2"])
        #expect(told.map(\.1) == [2, 3])
    }

    @Test("a user's standing in one room is read with the room's number then: member or not, a room left, a room not there")
    func standingInARoom() async throws {
        let database = try await ChatDatabase.start()
        let standings = try await onLoopThread {
            let store = try database.store()
            for (join, room, user) in [(true, "town", "ann"), (true, "town", "ben"), (false, "town", "ann"), (true, "attic", "ann")] {
                _ = try store.committing(join: join, room, user).get()
            }
            return try [("ann", "town"), ("ben", "town"), ("ann", "attic"), ("cat", "town"), ("ann", "nowhere")].map { user, room in
                try waitFor(store.loop) { store.standing(of: user, inRoom: room, completion: $0) }.get()
            }
        }
        #expect(
            standings == [
                RoomStanding(isMember: false, seq: 3), RoomStanding(isMember: true, seq: 3), RoomStanding(isMember: true, seq: 1),
                RoomStanding(isMember: false, seq: 3), RoomStanding(isMember: false, seq: 0)
            ])
    }

    @Test("joins of one room on three connections at once: distinct numbers, each member's the number of their own commit")
    func concurrentJoins() async throws {
        let database = try await ChatDatabase.start()
        let (commits, members) = try await onLoopThread {
            let stores = try (0..<3).map { _ in try database.store() }
            var commits: [String: MembershipCommit] = [:]
            for round in 0..<10 {
                for (index, store) in stores.enumerated() {
                    let user = "u\(round)-\(index)"
                    store.join(room: "hall", user: user, maximumRooms: nil) { commits[user] = try? $0.get() }
                }
            }
            try spin(stores[0].loop) { commits.count == 30 }
            return (commits, try stores[0].members("hall"))
        }
        #expect(Set(commits.values.map(\.seq)) == Set(1...30))
        #expect(members.count == 30)
        #expect(members.allSatisfy { commits[$0.name]?.seq == $0.joinedSeq }, "\(members)")
        // The count each answer read agrees with the order: the k-th join saw k members.
        #expect(commits.values.allSatisfy { UInt64($0.room.members) == $0.seq }, "\(commits.values.sorted { $0.seq < $1.seq })")
    }

    @Test("migrate numbers a version-3 database's rooms from 1 on; its members count as joined before every change")
    func upgradeFromVersion3() async throws {
        let database = try await ChatDatabase.start(migrated: false)
        let (migration, before, joined, after) = try await onLoopThread {
            let connection = try database.connect()
            try execute(connection, "CREATE TABLE schema_version(single boolean PRIMARY KEY DEFAULT true CHECK (single), version integer NOT NULL)")
            for statement in ChatSchema.steps[0..<3].joined() { try execute(connection, statement) }
            try execute(connection, "INSERT INTO schema_version(version) VALUES (3)")
            try execute(connection, "INSERT INTO conversations(key, room) VALUES ('r:town', 'town')")
            try execute(connection, "INSERT INTO members(\"user\", conversation_id, acked_through) SELECT 'ann', id, 0 FROM conversations")
            let migration = try waitFor(connection.loop) { ChatSchema.migrate(on: connection, completion: $0) }.get()
            let store = try database.store()
            let before = try store.members("town")
            #expect(try store.joinedRooms("ann") == ["town": 0], "older than every numbered change")
            let joined = try store.committing(join: true, "town", "ben")
            return (migration, before, joined, try store.members("town"))
        }
        #expect(migration == ChatSchema.Migration(from: 3, to: ChatSchema.version) && ChatSchema.version == 4)
        #expect(before == [RoomMember(name: "ann", joinedSeq: 0)])
        #expect(joined == .success(MembershipCommit(room: Room(name: "town", members: 2, isMember: true), seq: 1)))
        #expect(after == [RoomMember(name: "ann", joinedSeq: 0), RoomMember(name: "ben", joinedSeq: 1)])
    }
}
