import RunLoopKit
import RunLoopNet
import RunLoopRedis
import RunLoopTesting
import Testing

/// A `ReconnectingLink` over a real redis-server that is killed and started again.
@Suite struct RedisReconnectTests {
    @Test func theLinkComesBackAfterTheServerRestartsAndCommandsGoThrough() async throws {
        let server = try RedisServer.start()
        let (reply, failures, sameConnection) = try await onLoopThread {
            let loop = RunLoop.current
            let backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(50), jitter: 0)
            let link = ReconnectingLink(policy: ReconnectingLinkPolicy(backoff: backoff), jitter: .constant(0)) {
                RedisConnection(configuration: .unixSocket(server.socketPath))
            }
            defer { link.close() }
            var failures: [String] = []
            link.onAttemptFailed = { failure, _ in failures.append("\(failure)") }
            link.start()
            try loop.runUntil(timeout: .seconds(10)) { link.connection != nil }
            let first = try #require(link.connection)
            server.kill()
            try loop.runUntil(timeout: .seconds(10)) { !failures.isEmpty }
            #expect(link.connection == nil)
            try server.restart()
            try loop.runUntil(timeout: .seconds(10)) { link.connection != nil }
            let second = try #require(link.connection)
            return (try call(second, ["PING"]), failures, first === second)
        }
        #expect(reply == .success(.status("PONG")))
        #expect(!failures.isEmpty)
        #expect(!sameConnection)
    }
}
