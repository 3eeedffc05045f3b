import Logging
import RunLoopChat
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

/// A batch of users' contacts (the audiences of presence changes settled together) in one statement,
/// against a real PostgreSQL.
@Suite struct ContactBatchTests {
    /// Rooms over, at and under the limit of 4, rooms shared by several of the asked, direct
    /// conversations either way, a user in nothing, a name with NUL, a name asked twice.
    static let asked = ["ann", "ben", "cat", "dan", "eve", "gil", "hal", "nobody", "zed", "x\u{0}y", "ann"]

    /// Fills the store; its answers are the per-user query's.
    static func populate(_ store: PostgresChatStore) throws {
        for user in ["ann", "ben", "cat", "dan", "eve", "fay"] { _ = try store.joining("big", user).get() }
        for user in ["ann", "ben", "gil"] { _ = try store.joining("small", user).get() }
        for user in ["cat", "gil"] { _ = try store.joining("pair", user).get() }
        for user in ["dan", "eve", "hal", "ivy"] { _ = try store.joining("edge", user).get() }
        _ = try store.stored("a", id: "a", from: "ann", to: .user("zed"))
        _ = try store.stored("h", id: "h", from: "hal", to: .user("ann"))
    }

    @Test("a batch's contacts equal each user's own read: large rooms left out, one at the limit kept, direct conversations in, the user left out")
    func batchEqualsPerUserReads() async throws {
        let database = try await ChatDatabase.start()
        let (batch, perUser) = try await onLoopThread {
            let store = try database.store()
            try Self.populate(store)
            let batch = try waitFor(store.loop) { store.contacts(ofEach: Self.asked, roomsOfAtMost: 4, completion: $0) }.get()
            let perUser = try Self.asked.map { user in
                try waitFor(store.loop) { store.contacts(of: user, roomsOfAtMost: 4, completion: $0) }.get()
            }
            return (batch, perUser)
        }
        #expect(batch == perUser)
        #expect(batch[0] == ["ben", "gil", "hal", "zed"])
        #expect(batch[3] == ["eve", "hal", "ivy"])
        #expect(batch[7] == [] && batch[9] == [])
        #expect(batch[10] == batch[0])
    }

    @Test("a batch of users is one statement, asked of the store or through the chat's presence audiences")
    func batchIsOneStatement() async throws {
        let database = try await ChatDatabase.start()
        let (batch, chat) = try await onLoopThread { () -> (Int, Int) in
            let connection = try database.connect()
            let store = PostgresChatStore(connection: connection, authentication: .open)
            try Self.populate(store)
            let before = connection.statementCount
            _ = try waitFor(store.loop) { store.contacts(ofEach: Self.asked, roomsOfAtMost: 4, completion: $0) }.get()
            let batch = connection.statementCount - before
            let alone = try waitFor(store.loop) { store.contacts(ofEach: ["ann"], roomsOfAtMost: 4, completion: $0) }.get()
            #expect(alone == [["ben", "gil", "hal", "zed"]])
            #expect(connection.statementCount - before - batch == 1, "one user alone")
            let beforeChat = connection.statementCount
            let server = IMServer(store: store)
            defer { server.shutdown() }
            let waiting = Box<[IMPresenceAudience]>()
            ChatService().presenceAudiences(of: Self.asked, on: server) { waiting.value = $0 }
            try spin(store.loop) { waiting.value != nil }
            return (batch, connection.statementCount - beforeChat)
        }
        #expect(batch == 1)
        #expect(chat == 1, "the chat's audiences of a batch, on PostgreSQL")
    }

    @Test("the chat's audiences of a batch are the store's batch answer; its failure answers every user with nobody")
    func chatAudiencesAndFailure() async throws {
        let database = try await ChatDatabase.start()
        let (answered, failed, failedAudiences) = try await onLoopThread {
            let connection = try database.connect()
            let store = PostgresChatStore(connection: connection, authentication: .open, logger: .init(label: "test") { _ in CapturingLogHandler() })
            try Self.populate(store)
            let server = IMServer(store: store)
            defer { server.shutdown() }
            var settings = ChatService.Settings()
            settings.largeRoomMembers = 4
            let chat = ChatService(settings: settings)
            let answered = try waitFor(store.loop) { chat.presenceAudiences(of: Self.asked, on: server, completion: $0) }
            // Both reads are out when the connection goes: each waiter gets its failure.
            var failed: Result<[[String]], IMStatusCode>?
            var failedAudiences: [IMPresenceAudience]?
            store.contacts(ofEach: Self.asked, roomsOfAtMost: 4) { failed = $0 }
            chat.presenceAudiences(of: Self.asked, on: server) { failedAudiences = $0 }
            connection.close()
            try spin(store.loop) { failed != nil && failedAudiences != nil }
            return (answered, failed, failedAudiences)
        }
        let expected = try await onLoopThread {
            let store = try database.store()
            return try Self.asked.map { user in
                IMPresenceAudience.users(try waitFor(store.loop) { store.contacts(of: user, roomsOfAtMost: 4, completion: $0) }.get())
            }
        }
        #expect(answered == expected)
        #expect(failed == .failure(.internalError))
        #expect(failedAudiences == Self.asked.map { _ in .users([]) })
    }
}
