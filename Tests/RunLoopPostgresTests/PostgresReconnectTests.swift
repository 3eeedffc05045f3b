import RunLoopKit
import RunLoopNet
import RunLoopPostgres
import RunLoopTesting
import Testing

/// A `ReconnectingLink` over a real PostgreSQL server that is killed and started again.
@Suite struct PostgresReconnectTests {
    @Test func theLinkComesBackAfterTheServerRestartsAndQueriesGoThrough() async throws {
        let server = try await PostgresServer.start()
        let (value, failures, sameConnection) = try await onLoopThread {
            let loop = RunLoop.current
            let backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(100), jitter: 0)
            let link = ReconnectingLink(policy: ReconnectingLinkPolicy(backoff: backoff), jitter: .constant(0)) {
                PostgresConnection(loop: loop, configuration: PostgresConfiguration(server: server))
            }
            defer { link.close() }
            var failures: [String] = []
            link.onAttemptFailed = { failure, _ in failures.append("\(failure)") }
            link.start()
            try spin(loop) { link.connection != nil }
            let first = try #require(link.connection)
            server.kill()
            try spin(loop) { !failures.isEmpty }
            #expect(link.connection == nil)
            try server.restart()
            try spin(loop) { link.connection != nil }
            let second = try #require(link.connection)
            return (try run(second, "SELECT 1 + 1")[0, 0], failures, first === second)
        }
        #expect(value == "2")
        #expect(!failures.isEmpty)
        #expect(!sameConnection)
    }
}
