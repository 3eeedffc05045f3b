import RunLoopIMCore
import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

@testable import RunLoopChatPostgres

/// What an inbox read costs over a large backlog: the plan, not a timing.
@Suite struct InboxPlanTests {
    @Test("a window read over a 20,000-message backlog walks the indexes and visits about a window's rows")
    func windowReadUsesTheIndexes() async throws {
        let database = try await ChatDatabase.start()
        let (window, plan) = try await onLoopThread {
            let store = try database.store()
            let connection = try database.connect()
            // Two conversations with 20,000 messages each: Bob's with Alice, and one he is not in.
            for (sender, recipient) in [("alice", "bob"), ("carol", "dave")] {
                _ = try store.stored("first", id: "first", from: sender, to: .user(recipient))
                let key = IMConversation.direct(between: sender, and: recipient).storageKey
                try execute(
                    connection,
                    """
                    INSERT INTO messages(conversation_id, conversation_seq, sender, client_id, to_user, text, sent_at_ms)
                    SELECT c.id, c.last_seq + g, $2, 'bulk-' || g, $3, 'x', 0 FROM conversations c, generate_series(1, 20000) AS g WHERE c.key = $1
                    """, [key, sender, recipient])
                try execute(connection, "UPDATE conversations SET last_seq = last_seq + 20000 WHERE key = $1", [key])
            }
            try execute(connection, "ANALYZE")
            let window = try store.inbox("bob", limit: 50)
            let statement = PostgresChatStore.undeliveredStatement(user: "bob", afterKeys: [], afterSeqs: [], limit: 50)
            let rows = try execute(connection, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + statement.sql, statement.parameters)
            return (window, (0..<rows.count).compactMap { rows[$0, 0] })
        }
        #expect(window.map(\.conversationSeq) == Array(1...50))
        let text = plan.joined(separator: "\n")
        #expect(!text.contains("Seq Scan on messages"), "\(text)")
        let messageScans = plan.filter { $0.contains("Index Scan") && $0.contains(" on messages ") }
        #expect(!messageScans.isEmpty, "\(text)")
        // Rows the scans of messages produced, over all their loops: a window's worth, not the backlog.
        let visited = messageScans.map { InboxPlanTests.actualRows($0) }.reduce(0, +)
        #expect(visited > 0 && visited <= 51, "\(text)")
    }

    /// `rows × loops` of a plan line's `(actual rows=R loops=L)`.
    static func actualRows(_ line: String) -> Int {
        guard let range = line.firstRange(of: "actual rows=") else { return 0 }
        let fields = line[range.upperBound...].split(whereSeparator: { $0 == " " || $0 == ")" })
        let rows = Int(fields.first ?? "") ?? 0
        let loops = fields.first { $0.hasPrefix("loops=") }.flatMap { Int($0.dropFirst(6)) } ?? 1
        return rows * loops
    }
}
