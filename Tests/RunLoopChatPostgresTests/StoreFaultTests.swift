import Logging
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopPostgres
import RunLoopTesting
import Testing

/// The database going away or racing under a store: sends refused as temporary, resent and stored
/// once; a resend racing its first store on another node answered as a resend.
@Suite struct StoreFaultTests {
    @Test("a server killed mid-transaction: the SEND is a temporary refusal; resent after the restart it is stored once")
    func killedMidTransaction() async throws {
        let database = try await ChatDatabase.start()
        let logs = CapturingLogHandler()
        let (duringTransaction, whileDown, inboxWhileDown, afterRestart, again, rows) = try await onLoopThread {
            let loop = RunLoop.current
            let backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(100), jitter: 0)
            let link = ReconnectingLink(policy: ReconnectingLinkPolicy(backoff: backoff), jitter: .constant(0)) {
                PostgresConnection(loop: loop, configuration: database.configuration)
            }
            defer { link.close() }
            link.start()
            try spin(loop) { link.connection != nil }
            let store = PostgresChatStore(link: link, authentication: .open, logger: Logger(label: "test") { _ in logs })
            _ = try store.stored("first", id: "m0", from: "alice", to: .user("bob"))

            // Another session holds the conversation's row, so the send's transaction waits inside.
            let blocker = try database.connect()
            let watcher = try database.connect()
            let key = IMConversation.direct(between: "alice", and: "bob").storageKey
            blocker.transaction([
                PostgresStatement("UPDATE conversations SET last_seq = last_seq WHERE key = $1", [key]),
                PostgresStatement("SELECT pg_sleep(60)")
            ]) { _ in }
            try StoreFaultTests.waitUntil(watcher, "wait_event = 'PgSleep'")
            let duringTransaction = try StoreFaultTests.sendBlocked(store, "in flight", id: "m1", watcher: watcher)

            database.server.kill()
            try spin(loop) { duringTransaction.value != nil && link.connection == nil }
            let whileDown = try store.send("in flight", id: "m1", from: "alice", to: .user("bob"))
            let inboxWhileDown = try waitFor(loop) { store.undelivered(for: "bob", after: [:], limit: 10, completion: $0) }
            try database.server.restart()
            try spin(loop) { link.connection != nil }
            let afterRestart = try store.send("in flight", id: "m1", from: "alice", to: .user("bob"))
            let again = try store.send("in flight", id: "m1", from: "alice", to: .user("bob"))
            let rows = try execute(try database.connect(), "SELECT count(*) FROM messages WHERE client_id = 'm1'").int(0, 0)
            return (duringTransaction.value, whileDown, inboxWhileDown.failure, afterRestart, again, rows)
        }
        #expect(duringTransaction == .refused(.internalError))
        #expect(whileDown == .refused(.internalError))
        #expect(inboxWhileDown?.isTemporary == true)
        guard case .stored(let stored, _, true) = afterRestart else {
            Issue.record("after the restart: \(afterRestart)")
            return
        }
        #expect(stored.conversationSeq == 2)
        #expect(again == .stored(stored, recipients: ["bob"], isNew: false))
        #expect(rows == 1)
        // What an operator looks for: the failure, as temporary, at warning; nothing at error.
        let records = logs.records.get()
        #expect(
            records.contains { $0.level == .warning && $0.message.contains("message m1 from alice") && $0.message.contains("commit outcome unknown") }
        )
        #expect(!records.contains { $0.level >= .error })
    }

    @Test("a resend racing the first store on another node: the unique key makes it a resend of the first row")
    func racingResendReadsTheFirstRow() async throws {
        let database = try await ChatDatabase.start()
        let logs = CapturingLogHandler()
        let (result, rows, lastSeq) = try await onLoopThread {
            let store = try database.store(logs: logs)
            _ = try store.stored("first", id: "m0", from: "alice", to: .user("bob"))
            // "The other node": its transaction inserts m1, then waits for a lock the gate holds, so
            // it commits only once this store's insert of m1 waits for it.
            let other = try database.connect()
            let gate = try database.connect()
            let watcher = try database.connect()
            try execute(gate, "SELECT pg_advisory_lock(42)")
            let key = IMConversation.direct(between: "alice", and: "bob").storageKey
            other.transaction([
                PostgresStatement(
                    """
                    INSERT INTO messages(conversation_id, conversation_seq, sender, client_id, to_user, text, sent_at_ms)
                    SELECT id, 2, 'alice', 'm1', 'bob', 'from the other node', 5 FROM conversations WHERE key = $1
                    """, [key]),
                PostgresStatement("UPDATE conversations SET last_seq = 2 WHERE key = $1", [key]),
                PostgresStatement("SELECT pg_advisory_lock_shared(42)")
            ]) { _ in }
            try StoreFaultTests.waitUntil(watcher, "wait_event = 'advisory'")
            let result = try StoreFaultTests.sendBlocked(store, "from this node", id: "m1", watcher: watcher)
            try execute(gate, "SELECT pg_advisory_unlock(42)")
            try spin(store.loop) { result.value != nil }
            let rows = try execute(watcher, "SELECT count(*) FROM messages WHERE client_id = 'm1'").int(0, 0)
            let lastSeq = try execute(watcher, "SELECT last_seq FROM conversations WHERE key = $1", [key]).int(0, 0)
            return (result.value, rows, lastSeq)
        }
        guard case .stored(let stored, ["bob"], false) = result else {
            Issue.record("\(String(describing: result))")
            return
        }
        #expect(stored.text == "from the other node" && stored.conversationSeq == 2 && stored.sentAtMilliseconds == 5)
        #expect(rows == 1)
        // This store's increment rolled back with its transaction.
        #expect(lastSeq == 2)
        // Handled, so no alarm: the unique violation is logged at debug only.
        let records = logs.records.get()
        #expect(records.contains { $0.level == .debug && $0.message.contains("23505") })
        #expect(!records.contains { $0.level > .debug })
    }

    /// Starts a send from Alice to Bob and returns once its transaction waits for another's.
    static func sendBlocked(_ store: PostgresChatStore, _ text: String, id: String, watcher: PostgresConnection) throws -> Box<IMStoreResult> {
        let answer = store.startSend(text, id: id, from: "alice", to: .user("bob"))
        try waitUntil(watcher, "wait_event = 'transactionid'")
        return answer
    }

    /// Polls `pg_stat_activity` until a session matches `condition`.
    static func waitUntil(_ watcher: PostgresConnection, _ condition: String) throws {
        for _ in 0..<2000 {
            if try execute(watcher, "SELECT count(*) FROM pg_stat_activity WHERE \(condition)").int(0, 0) ?? 0 > 0 { return }
            try watcher.loop.run(.default, timeout: .milliseconds(5))
        }
        throw TestFailure("no session with \(condition)")
    }
}
