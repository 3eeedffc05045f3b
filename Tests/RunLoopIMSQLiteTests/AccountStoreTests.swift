import RunLoopTesting
import Testing

@testable import RunLoopChat
@testable import RunLoopIM
@testable import RunLoopIMCore
@testable import RunLoopIMSQLite

/// Schema 3's accounts: a password replaced, an account disabled and enabled, an account removed with
/// what is the user's; and the upgrade of a version-2 file.
@Suite("SQLite accounts")
struct AccountStoreTests {
    static func store() throws -> (SQLiteIMStore, AccountStore) {
        let store = try SQLiteIMStore(path: ":memory:")
        return (store, try AccountStore(database: store.database))
    }

    static func send(_ store: SQLiteIMStore, _ id: String, from sender: String, to recipient: IMRecipient, at milliseconds: UInt64 = 1) {
        let message = IMMessage(id: id, from: "", recipient: recipient, text: id, seq: 0, sentAtMilliseconds: 0)
        guard case .stored = store.store(message, from: sender, nowMilliseconds: milliseconds) else {
            Issue.record("\(id) not stored")
            return
        }
    }

    @Test("a version-2 file with accounts becomes the current version: the accounts kept, enabled, and they can be disabled")
    func upgradeFromVersionTwo() throws {
        let path = temporaryPath("v2.db")
        defer { removeDatabase(path) }
        let old = try SQLiteDatabase(path: path)
        try old.execute(SQLiteIMStore.schema)
        try old.execute("CREATE TABLE accounts(name TEXT PRIMARY KEY, password_hash TEXT NOT NULL) WITHOUT ROWID")
        try old.execute("INSERT INTO accounts VALUES ('alice', 'scrypt$old'); PRAGMA user_version = 2")
        old.close()

        let store = try SQLiteIMStore(path: path)
        let accounts = try AccountStore(database: store.database)
        var version: Int64 = 0
        try store.database.query("PRAGMA user_version") { row in version = row.integer(0) }
        #expect(version == SQLiteIMStore.schemaVersion)
        #expect(try accounts.account(named: "ALICE") == AccountStore.Account(name: "alice", passwordHash: "scrypt$old", isDisabled: false))
        #expect(try accounts.setDisabled(true, user: "alice") == .done(account: "alice"))
        #expect(try accounts.account(named: "alice")?.isDisabled == true)
    }

    @Test("password, disable and enable say what they did: done (in any case), unchanged, or no such account")
    func changes() throws {
        let (_, accounts) = try Self.store()
        try accounts.create(user: "bob", passwordHash: "scrypt$1")
        #expect(try accounts.setPasswordHash("scrypt$2", of: "BOB") == .done(account: "bob"))
        #expect(try accounts.passwordHash(of: "bob") == "scrypt$2")
        #expect(try accounts.setPasswordHash("scrypt$3", of: "nobody") == .noSuchAccount)
        #expect(try accounts.setDisabled(false, user: "bob") == .unchanged(account: "bob"))
        #expect(try accounts.setDisabled(true, user: "Bob") == .done(account: "bob"))
        #expect(try accounts.setDisabled(true, user: "bob") == .unchanged(account: "bob"))
        #expect(try accounts.setDisabled(false, user: "bob") == .done(account: "bob"))
        #expect(try accounts.account(named: "bob")?.isDisabled == false)
        #expect(try accounts.setDisabled(true, user: "nobody") == .noSuchAccount)
    }

    @Test("remove takes the account, its rooms and inbox, its messages and its direct conversations; others' room messages stay")
    func removal() throws {
        let (store, accounts) = try Self.store()
        for user in ["alice", "bob", "carol"] {
            try accounts.create(user: user, passwordHash: "h")
            _ = try store.join(room: "hall", user: user).get()
        }
        Self.send(store, "a1", from: "alice", to: .room("hall"))
        Self.send(store, "b1", from: "bob", to: .room("hall"))
        Self.send(store, "a2", from: "alice", to: .user("bob"))
        Self.send(store, "b2", from: "bob", to: .user("alice"))
        Self.send(store, "c1", from: "carol", to: .user("bob"))
        _ = store.abandon(["lost"], from: "alice")

        #expect(try accounts.remove(user: "ALICE") == .done(account: "alice"))
        #expect(try accounts.remove(user: "alice") == .noSuchAccount)
        #expect(try accounts.names() == ["bob", "carol"])
        let hall = try store.history(HistoryQuery(conversation: .room("hall")), for: "bob", limit: 10).get()
        #expect(hall.messages.map(\.id) == ["b1"], "alice's room message goes, bob's stays")
        let direct = try store.history(HistoryQuery(conversation: .user("alice")), for: "bob", limit: 10).get()
        #expect(direct.messages.isEmpty, "the direct conversation goes from both sides")
        #expect(try store.undelivered(for: "bob").map(\.id) == ["c1"], "bob's other inbox stays")
        #expect(try store.rooms(for: "bob", after: "", limit: 10).get() == [Room(name: "hall", members: 2, isMember: true)])
        for table in ["abandoned", "users WHERE name = 'alice'", "members WHERE user = 'alice'"] {
            #expect(try SchemaTests.count(table, in: store.database) == 0, "\(table)")
        }

        // A new alice starts empty: nothing of the old one's is hers, and her ids are new ones.
        try accounts.create(user: "alice", passwordHash: "h2")
        guard case .stored(let again, _, true) = store.store(SchemaTests.message("a2", to: .user("bob")), from: "alice", nowMilliseconds: 2) else {
            Issue.record("a2 was taken for a resend of the removed account's message")
            return
        }
        #expect(try store.history(HistoryQuery(conversation: .user("bob")), for: "alice", limit: 10).get().messages.map(\.seq) == [again.seq])
        #expect(try store.undelivered(for: "alice").isEmpty)
    }

    @Test("retention deletes old messages everyone acknowledged, never one still owed, a bounded batch at a time")
    func pruning() throws {
        let (store, _) = try Self.store()
        for user in ["alice", "bob"] { _ = try store.join(room: "hall", user: user).get() }
        for index in 1...5 { Self.send(store, "old\(index)", from: "alice", to: .room("hall"), at: 1_000) }
        Self.send(store, "owed", from: "alice", to: .user("carol"), at: 1_000)
        Self.send(store, "new", from: "alice", to: .room("hall"), at: 9_000)
        // bob acknowledged the first four room messages; carol never came.
        let inbox = try store.undelivered(for: "bob")
        store.acknowledge([inbox[3].seq], for: "bob")

        var batches: [HistoryPruneBatch] = []
        var after: UInt64 = 0
        repeat {
            let batch = try store.pruneHistory(sentBefore: 5_000, after: after, limit: 2).get()
            batches.append(batch)
            after = batch.lastExamined
        } while !(batches.last?.isSweepDone ?? true)
        #expect(batches.map(\.deleted) == [2, 2, 0, 0], "two a batch; the unacknowledged fifth and carol's stay")
        #expect(batches.last?.isSweepDone == true && batches.count == 4, "ended at the message newer than the cutoff")
        let left = try store.history(HistoryQuery(conversation: .room("hall")), for: "bob", limit: 10).get().messages.map(\.id)
        #expect(left == ["new", "old5"])
        #expect(try store.undelivered(for: "carol").map(\.id) == ["owed"], "an offline user's message is kept, however old")
        #expect(try store.undelivered(for: "bob").map(\.id) == ["old5", "new"])
    }
}
