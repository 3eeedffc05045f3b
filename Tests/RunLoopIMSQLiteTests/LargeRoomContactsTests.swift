import RunLoopTesting
import Testing

@testable import RunLoopChat
@testable import RunLoopIM
@testable import RunLoopIMCore
@testable import RunLoopIMSQLite

/// Contacts leave out large rooms (docs/PROTOCOL.md §8), and telling a large room from a small one
/// costs the limit, not the room: a login or JOIN of a member of a room of 10,000 must not read it.
@Suite("SQLite contacts and large rooms")
struct LargeRoomContactsTests {
    /// A store where ann is in `big` (`bigMembers` members), in `small` (with ben and cat) and has
    /// written to zed.
    static func store(bigMembers: Int) throws -> SQLiteIMStore {
        let store = try SQLiteIMStore(path: ":memory:")
        for index in 0..<bigMembers - 2 { _ = try store.join(room: "big", user: "m\(index)").get() }
        for user in ["ann", "ben"] { _ = try store.join(room: "big", user: user).get() }
        for user in ["ann", "ben", "cat"] { _ = try store.join(room: "small", user: user).get() }
        let message = IMMessage(id: "d", from: "", recipient: .user("zed"), text: "hi", seq: 0, sentAtMilliseconds: 0)
        let stored = if case .stored = store.store(message, from: "ann", nowMilliseconds: 1) { true } else { false }
        try #require(stored, "the direct message is stored")
        return store
    }

    /// The contacts as one join of the members table with itself (the store's read before it went
    /// through the members index per conversation): the reference its answers must equal.
    static func joinedContacts(of user: String, roomsOfAtMost limit: Int, in store: SQLiteIMStore) throws -> [String] {
        var names: [String] = []
        try store.database.query(
            """
            SELECT DISTINCT other.user FROM members mb JOIN members other ON other.conversation_id = mb.conversation_id
            WHERE mb.user = ?1 AND other.user <> mb.user
              AND (SELECT 1 FROM members n WHERE n.conversation_id = mb.conversation_id LIMIT 1 OFFSET ?2) IS NULL
            ORDER BY other.user
            """, [.text(user), .integer(Int64(limit))]
        ) { row in if let name = row.text(0) { names.append(name) } }
        return names
    }

    @Test("one user's contacts are the join's answer, for members of large, small, direct and no conversations")
    func oneUserIsTheJoin() throws {
        let store = try Self.store(bigMembers: 12)
        for user in ["m0", "Émile", "zed"] { _ = try store.join(room: "small", user: user).get() }
        for user in ["ann", "ben", "cat", "zed", "m0", "m9", "Émile", "nobody"] {
            for limit in [0, 2, 5, 6, 11, 12, 13] {
                #expect(
                    try store.contacts(of: user, roomsOfAtMost: limit).get() == (try Self.joinedContacts(of: user, roomsOfAtMost: limit, in: store)),
                    "\(user), limit \(limit)")
            }
        }
    }

    @Test("a room over the limit adds nobody; rooms up to it and direct conversations do")
    func largeRoomsAddNobody() throws {
        let store = try Self.store(bigMembers: 12)
        #expect(try store.contacts(of: "ann", roomsOfAtMost: 5).get() == ["ben", "cat", "zed"])
        #expect(try store.contacts(of: "ann", roomsOfAtMost: 13).get() == ["ben", "cat"] + (0..<10).map { "m\($0)" }.sorted() + ["zed"])
        // Exactly at the limit the room is not large.
        #expect(try store.contacts(of: "m0", roomsOfAtMost: 12).get().count == 11)
        #expect(try store.contacts(of: "m0", roomsOfAtMost: 11).get().isEmpty)
    }

    @Test(
        "the read of a large room's member's contacts steps through the limit, not the room: the same work at 100 and 3,000 members, one user or a batch"
    )
    func largeRoomIsNotRead() throws {
        var steps: [Int] = []
        var batchSteps: [Int] = []
        for members in [100, 3_000] {
            let store = try Self.store(bigMembers: members)
            _ = store.database.work(of: SQLiteIMStore.conversationMembersSQL)
            #expect(try store.contacts(of: "ann", roomsOfAtMost: 10).get() == ["ben", "cat", "zed"])
            let work = try #require(store.database.work(of: SQLiteIMStore.conversationMembersSQL))
            #expect(work.fullScanSteps == 0)
            steps.append(work.virtualMachineSteps)
            _ = store.database.work(of: SQLiteIMStore.conversationMembersSQL)
            #expect(try store.contacts(ofEach: ["ann", "ben"], roomsOfAtMost: 10).get() == [["ben", "cat", "zed"], ["ann", "cat"]])
            let batchWork = try #require(store.database.work(of: SQLiteIMStore.conversationMembersSQL))
            #expect(batchWork.fullScanSteps == 0)
            batchSteps.append(batchWork.virtualMachineSteps)
        }
        #expect(steps[0] == steps[1], "virtual-machine steps at 100 and 3,000 members: \(steps)")
        #expect(steps[1] < 1_000, "\(steps)")
        #expect(batchSteps[0] == batchSteps[1], "a batch's, at 100 and 3,000 members: \(batchSteps)")
    }

    @Test("contacts of several users at once are each one's contacts, in order, with each conversation's members read once")
    func contactsOfEachShareTheirReads() async throws {
        try await onLoopThread {
            let store = try Self.store(bigMembers: 12)
            for user in ["m0", "Émile"] { _ = try store.join(room: "small", user: user).get() }
            let users = ["ann", "ben", "cat", "zed", "m0", "m1", "Émile", "nobody"]
            for limit in [5, 13] {
                _ = store.database.runs(of: SQLiteIMStore.conversationMembersSQL)
                let each = try store.contacts(ofEach: users, roomsOfAtMost: limit).get()
                #expect(each == (try users.map { try Self.joinedContacts(of: $0, roomsOfAtMost: limit, in: store) }), "limit \(limit)")
                // big, small, and ann and zed's direct conversation: eight users, three reads.
                #expect(store.database.runs(of: SQLiteIMStore.conversationMembersSQL) == 3, "limit \(limit)")
            }
            // The chat's answer to an announcement's batch is that read.
            let server = IMServer(store: store)
            var answered: [IMPresenceAudience] = []
            ChatService().presenceAudiences(of: users, on: server) { answered = $0 }
            let one = try users.map { try Self.joinedContacts(of: $0, roomsOfAtMost: ChatService.Settings().largeRoomMembers, in: store) }
            #expect(answered == one.map { .users($0) })
            #expect(store.database.runs(of: SQLiteIMStore.conversationMembersSQL) == 3)
        }
    }
}
