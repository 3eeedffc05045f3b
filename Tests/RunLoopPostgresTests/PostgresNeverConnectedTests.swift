import RunLoopKit
import RunLoopPostgres
import RunLoopTesting
import Testing

/// Queries queued on a connection that never connects still complete, once each, in order.
@Suite struct PostgresNeverConnectedTests {
    /// A configuration that is never dialled: these connections are never told to connect.
    static let nowhere = PostgresConfiguration(host: "/nonexistent", user: "nobody", database: "nothing")

    @Test func closedBeforeConnectingItsQueuedQueriesFailWithClosed() async throws {
        let outcomes = try await onLoopThread {
            let connection = PostgresConnection(configuration: Self.nowhere)
            var outcomes: [String] = []
            connection.query("SELECT 1") { outcomes.append("first: \($0.failure.map { "\($0)" } ?? "rows")") }
            connection.query("SELECT 2") { outcomes.append("second: \($0.failure.map { "\($0)" } ?? "rows")") }
            connection.close()
            try spin(connection.loop, for: .seconds(5)) { outcomes.count == 2 }
            return outcomes
        }
        #expect(outcomes == ["first: \(PostgresError.closed)", "second: \(PostgresError.closed)"])
    }

    @Test func droppedBeforeConnectingItsQueuedQueriesFailWithClosed() async throws {
        let outcomes = try await onLoopThread {
            let loop = RunLoop.current
            var outcomes: [String] = []
            var connection: PostgresConnection? = PostgresConnection(configuration: Self.nowhere)
            connection?.query("SELECT 1") { outcomes.append("first: \($0.failure.map { "\($0)" } ?? "rows")") }
            connection?.query("SELECT 2") { outcomes.append("second: \($0.failure.map { "\($0)" } ?? "rows")") }
            connection = nil
            // Not inside the release that dropped it: on the loop's next pass.
            #expect(outcomes.isEmpty)
            try spin(loop, for: .seconds(5)) { outcomes.count == 2 }
            try loop.run(.default, timeout: .milliseconds(20))
            return outcomes
        }
        #expect(outcomes == ["first: \(PostgresError.closed)", "second: \(PostgresError.closed)"])
    }
}
