import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

@testable import RunLoopChatPostgres

/// Schema version 2's accounts (disabled, a new password, removed) and history retention, as the
/// SQLite store has them.
@Suite struct AccountAndRetentionTests {
    @Test("migrate upgrades a version-1 database: its accounts kept and enabled")
    func upgradeFromVersionOne() async throws {
        let database = try await ChatDatabase.start(migrated: false)
        let (migration, disabled) = try await onLoopThread {
            let connection = try database.connect()
            try execute(connection, "CREATE TABLE schema_version(single boolean PRIMARY KEY DEFAULT true CHECK (single), version integer NOT NULL)")
            for statement in ChatSchema.steps[0] { try execute(connection, statement) }
            try execute(connection, "INSERT INTO schema_version(version) VALUES (1)")
            try execute(connection, "INSERT INTO accounts VALUES ('alice', 'scrypt$old')")
            let migration = try waitFor(connection.loop) { ChatSchema.migrate(on: connection, completion: $0) }.get()
            return (migration, try execute(connection, "SELECT disabled FROM accounts WHERE name = 'alice'")[0, 0])
        }
        #expect(migration == ChatSchema.Migration(from: 1, to: ChatSchema.version))
        #expect(disabled == "f")
    }

    @Test("password, disable, enable and remove say what they did; a disabled account's right password is refused as disabled")
    func accountChanges() async throws {
        let database = try await ChatDatabase.start()
        try await onLoopThread {
            let store = try database.store(authentication: .accounts)
            let hasher = PasswordHasher.forTests
            func change(_ operation: (@escaping (Result<AccountChange, IMStoreFailure>) -> Void) -> Void) throws -> AccountChange {
                try waitFor(store.loop, operation).get()
            }
            #expect(try waitFor(store.loop) { store.createAccount("bob", passwordHash: hasher.hash("old"), completion: $0) }.get())
            #expect(try change { store.setPasswordHash(hasher.hash("new"), of: "BOB", completion: $0) } == .done(account: "bob"))
            #expect(try store.login("bob", "old") == .refused(.authenticationFailed, reason: "unknown user or wrong password"))
            #expect(try store.login("bob", "new") == .acceptedAs(user: "bob"))
            #expect(try change { store.setDisabled(true, user: "Bob", completion: $0) } == .done(account: "bob"))
            #expect(try change { store.setDisabled(true, user: "bob", completion: $0) } == .unchanged(account: "bob"))
            #expect(try store.login("bob", "new") == .accountDisabled)
            #expect(try store.login("bob", "old") == .refused(.authenticationFailed, reason: "unknown user or wrong password"))
            #expect(try change { store.setDisabled(false, user: "bob", completion: $0) } == .done(account: "bob"))
            #expect(try change { store.setDisabled(true, user: "nobody", completion: $0) } == .noSuchAccount)
            #expect(try change { store.setPasswordHash("x", of: "nobody", completion: $0) } == .noSuchAccount)

            for user in ["alice", "carol"] {
                #expect(try waitFor(store.loop) { store.createAccount(user, passwordHash: "h", completion: $0) }.get())
            }
            for user in ["alice", "bob", "carol"] { _ = try store.joining("hall", user).get() }
            _ = try store.stored("a1", id: "a1", from: "alice", to: .room("hall"))
            _ = try store.stored("b1", id: "b1", from: "bob", to: .room("hall"))
            _ = try store.stored("a2", id: "a2", from: "alice", to: .user("bob"))
            _ = try store.stored("b2", id: "b2", from: "bob", to: .user("alice"))
            _ = try store.stored("c1", id: "c1", from: "carol", to: .user("bob"))
            #expect(try change { store.removeAccount("ALICE", completion: $0) } == .done(account: "alice"))
            #expect(try change { store.removeAccount("alice", completion: $0) } == .noSuchAccount)
            #expect(try store.page(.room("hall"), for: "bob", limit: 10).get().messages.map(\.id) == ["b1"])
            #expect(try store.page(.user("alice"), for: "bob", limit: 10).get().messages.isEmpty)
            #expect(try store.inbox("bob").map(\.id) == ["c1"])
            #expect(try store.roomList("bob") == [Room(name: "hall", members: 2, isMember: true)])
            guard case .refused(.unknownRecipient) = try store.send("x", id: "x", from: "bob", to: .user("alice")) else {
                Issue.record("a removed user is no recipient")
                return
            }
        }
    }

    @Test("retention deletes old messages everyone acknowledged, never one still owed, a bounded batch at a time")
    func pruning() async throws {
        let database = try await ChatDatabase.start()
        try await onLoopThread {
            let store = try database.store()
            for user in ["alice", "bob"] { _ = try store.joining("hall", user).get() }
            for index in 1...5 { _ = try store.send("old\(index)", id: "old\(index)", from: "alice", to: .room("hall"), at: 1_000) }
            _ = try store.send("owed", id: "owed", from: "alice", to: .user("carol"), at: 1_000)
            _ = try store.send("new", id: "new", from: "alice", to: .room("hall"), at: 9_000)
            let inbox = try store.inbox("bob")
            store.acknowledge([inbox[3].seq], for: "bob")  // on the same connection: before the batches

            var batches: [HistoryPruneBatch] = []
            var after: UInt64 = 0
            repeat {
                let batch = try waitFor(store.loop) { store.pruneHistory(sentBefore: 5_000, after: after, limit: 2, completion: $0) }.get()
                batches.append(batch)
                after = batch.lastExamined
            } while !(batches.last?.isSweepDone ?? true)
            #expect(batches.map(\.deleted) == [2, 2, 0, 0])
            #expect(try store.page(.room("hall"), for: "bob", limit: 10).get().messages.map(\.id) == ["new", "old5"])
            #expect(try store.inbox("carol").map(\.id) == ["owed"])
        }
    }
}
