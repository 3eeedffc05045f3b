import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopTesting
import Testing

@testable import RunLoopIMSQLite

/// Schema 5: each room numbers its joins and leaves (``MembershipCommit``) and each member keeps their
/// join's number — what keeps a MEMBERSHIP notice from members who joined after its change. The
/// memory store numbers the same way.
@Suite("Membership numbers in the SQLite and memory stores")
struct MembershipNumberTests {
    @Test("joins and leaves are numbered per room in commit order; a member keeps their join's number, a refused change takes none")
    func numbering() throws {
        let stores: [any SynchronousChatStore] = [try SQLiteIMStore(path: ":memory:"), InMemoryIMStore()]
        for store in stores {
            let seqs = [
                try store.join(room: "town", user: "ann").get(), try store.join(room: "town", user: "ben").get(),
                try store.join(room: "town", user: "ben").get(), try store.leave(room: "town", user: "ben").get(),
                try store.join(room: "attic", user: "cat").get(), try store.join(room: "town", user: "cat").get()
            ].map(\.seq)
            #expect(seqs == [1, 2, 3, 4, 1, 5], "\(type(of: store))")
            #expect(store.leave(room: "town", user: "dan") == .failure(.notAMember))
            #expect(store.join(room: "town", user: "dan", maximumRooms: 0) == .failure(.tooManyRooms))
            #expect(try store.join(room: "town", user: "ben").get().seq == 6, "\(type(of: store)): a refusal is no change")
            #expect(try store.join(room: "town", user: "ann").get().seq == 7)
            #expect(
                try store.members(ofRoom: "town").get() == [
                    RoomMember(name: "ann", joinedSeq: 1), RoomMember(name: "ben", joinedSeq: 6), RoomMember(name: "cat", joinedSeq: 5)
                ], "\(type(of: store)): ann joined again keeps her first join's number")
        }
    }

    @Test("a schema-4 file: its members count as joined before every change, which number from 1 after the upgrade")
    func upgradeFromSchema4() throws {
        let path = temporaryPath("schema-4.db")
        defer { removeDatabase(path) }
        let old = try SQLiteIMStore(path: path)
        for user in ["ann", "ben"] { _ = try old.join(room: "town", user: user).get() }
        try old.database.execute(
            """
            ALTER TABLE members DROP COLUMN joined_seq; ALTER TABLE conversations DROP COLUMN membership_seq;
            PRAGMA user_version = 4;
            """)
        old.database.close()
        let store = try SQLiteIMStore(path: path)
        var version: Int64 = 0
        try store.database.query("PRAGMA user_version") { row in version = row.integer(0) }
        #expect(version == SQLiteIMStore.schemaVersion && version == 5)
        #expect(try store.members(ofRoom: "town").get() == [RoomMember(name: "ann", joinedSeq: 0), RoomMember(name: "ben", joinedSeq: 0)])
        #expect(try store.join(room: "town", user: "cat").get() == MembershipCommit(room: Room(name: "town", members: 3, isMember: true), seq: 1))
        #expect(try store.leave(room: "town", user: "ann").get().seq == 2)
        #expect(try store.members(ofRoom: "town").get() == [RoomMember(name: "ben", joinedSeq: 0), RoomMember(name: "cat", joinedSeq: 1)])
    }
}
