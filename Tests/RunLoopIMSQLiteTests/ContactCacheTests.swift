import RunLoopTesting
import Testing

@testable import RunLoopChat
@testable import RunLoopIM
@testable import RunLoopIMCore
@testable import RunLoopIMSQLite

/// Issue 22: a login's audience in a room of 1,000 read the room's 1,000 names each time; the store
/// now keeps the conversations' members it read while nothing is written to the database. Every kind
/// of write must drop them: here (a JOIN, a LEAVE, a first direct message, an account removed) and
/// by another connection to the file.
@Suite("SQLite contacts kept between writes")
struct ContactCacheTests {
    private static func contacts(_ user: String, _ store: SQLiteIMStore) throws -> [String] {
        try store.contacts(of: user, roomsOfAtMost: 1_000).get()
    }

    /// Runs of the members read since the last call.
    private static func membersRead(_ store: SQLiteIMStore) -> Int {
        store.database.runs(of: SQLiteIMStore.conversationMembersSQL) ?? 0
    }

    @Test("with nothing written, the next logins' audiences read no members again; after any write they do, and are right")
    func keptUntilAnythingIsWritten() throws {
        let path = temporaryPath("contact-cache.db")
        defer { removeDatabase(path) }
        let store = try SQLiteIMStore(path: path)
        for user in ["ann", "ben", "cat"] { _ = try store.join(room: "lobby", user: user).get() }
        #expect(try Self.contacts("ann", store) == ["ben", "cat"])
        _ = Self.membersRead(store)
        #expect(try Self.contacts("ben", store) == ["ann", "cat"])
        #expect(try Self.contacts("cat", store) == ["ann", "ben"])
        #expect(Self.membersRead(store) == 0, "the room's members as read for ann")

        _ = try store.join(room: "lobby", user: "dan").get()
        #expect(try Self.contacts("ann", store) == ["ben", "cat", "dan"])
        _ = try store.leave(room: "lobby", user: "ben").get()
        #expect(try Self.contacts("ann", store) == ["cat", "dan"])
        let message = IMMessage(id: "d1", from: "", recipient: .user("zed"), text: "hi", seq: 0, sentAtMilliseconds: 0)
        guard case .stored = store.store(message, from: "ann", nowMilliseconds: 1) else {
            Issue.record("the first direct message is not stored")
            return
        }
        #expect(try Self.contacts("ann", store) == ["cat", "dan", "zed"])
        #expect(try Self.contacts("zed", store) == ["ann"])

        let other = try SQLiteIMStore(path: path)
        _ = try other.join(room: "lobby", user: "eve").get()
        #expect(try Self.contacts("ann", store) == ["cat", "dan", "eve", "zed"], "another connection's commit")

        let accounts = try AccountStore(database: store.database)
        _ = try accounts.create(user: "dan", passwordHash: "scrypt$x")
        #expect(try Self.contacts("cat", store) == ["ann", "dan", "eve"])
        _ = try accounts.remove(user: "dan")
        #expect(try Self.contacts("cat", store) == ["ann", "eve"], "an account removed through the same connection")

        _ = Self.membersRead(store)
        store.releaseMemory()
        #expect(try Self.contacts("eve", store) == ["ann", "cat"])
        #expect(Self.membersRead(store) == 1, "read again once released")
        other.database.close()
    }

    @Test("a read with another limit does not use members read with the last one")
    func limitChangesTheAnswer() throws {
        let store = try SQLiteIMStore(path: ":memory:")
        for user in ["ann", "ben", "cat"] { _ = try store.join(room: "lobby", user: user).get() }
        #expect(try store.contacts(of: "ann", roomsOfAtMost: 3).get() == ["ben", "cat"])
        #expect(try store.contacts(of: "ann", roomsOfAtMost: 2).get().isEmpty, "a large room at this limit")
        #expect(try store.contacts(of: "ann", roomsOfAtMost: 3).get() == ["ben", "cat"])
    }
}
