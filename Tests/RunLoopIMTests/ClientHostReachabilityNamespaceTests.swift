import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// IMClient given a host name and following a ``NetworkReachability`` of that name, in a network
/// namespace made for the test (root only; skipped with the reason otherwise).
@Suite("Client following a host name's reachability in a network namespace", NetworkNamespaces.available)
struct ClientHostReachabilityNamespaceTests {
    struct Outcome: Sendable {
        var online = false
        var clientStates: [IMConnectionState] = []
        var disconnects: [IMDisconnectReason] = []
        var delivered: [IMDeliveryState] = []
    }

    @Test("only loopback, up, and no default route: a client given localhost connects to a server on 127.0.0.1")
    func localhostWithoutDefaultRoute() async throws {
        let namespace = try TestNamespace()
        defer { namespace.delete() }
        try NetworkNamespaces.ip("-n", namespace.name, "link", "set", "lo", "up")
        let outcome = try await onLoopThread(inNamespace: namespace.name) { () throws -> Outcome in
            let loop = RunLoop.current
            var outcome = Outcome()
            // A client configured as `chat-node client --host localhost` is: the connector and the
            // reachability both get the name.
            let server = IMServer(store: InMemoryIMStore())
            try server.listen(host: "127.0.0.1", port: 0)
            let reachability = try NetworkReachability(host: "localhost")
            let client = IMClient(
                configuration: clientConfiguration("alice"),
                connector: TCPFrameLink.connector(host: "localhost", port: server.port, connectTimeout: .seconds(5)))
            let log = ClientRecorder()
            log.attach(to: client)
            client.follow(reachability)
            client.start()
            outcome.online = try spin(loop, for: .seconds(20)) { client.state == .online && !reachability.resolvedAddresses.isEmpty }
            if outcome.online {
                let id = try client.send("to myself", to: .user("alice"))
                try spin(loop, for: .seconds(10)) { log.deliveries[id]?.last?.isFinal == true }
                outcome.delivered = log.deliveries[id] ?? []
            }
            outcome.clientStates = log.states
            outcome.disconnects = log.disconnects.map(\.1)
            client.close()
            try spin(loop, for: .seconds(10)) { if case .closed = client.state { return true } else { return false } }
            server.shutdown()
            reachability.invalidate()
            try loop.run(.default, timeout: .milliseconds(20))
            return outcome
        }
        #expect(outcome.online, "states: \(outcome.clientStates)")
        #expect(!outcome.clientStates.contains { $0.isWaitingForNetwork }, "\(outcome.clientStates)")
        #expect(outcome.clientStates.prefix(3) == [.connecting(attempt: 1), .loggingIn, .online], "\(outcome.clientStates)")
        #expect(outcome.disconnects.isEmpty, "\(outcome.disconnects)")
        #expect(outcome.delivered == [.queued, .sent(attempt: 1), .stored(seq: 1)])
    }
}
