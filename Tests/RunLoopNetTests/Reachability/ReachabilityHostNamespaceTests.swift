import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopNet

/// NetworkReachability(host:) in network namespaces made for each test (root only; skipped with the
/// reason otherwise): a name is judged by the route to its addresses, not by a default route.
@Suite("Reachability of a host name in network namespaces", NetworkNamespaces.available)
struct ReachabilityHostNamespaceTests {
    struct Outcome: Sendable {
        var network: NetworkPath = .reachable
        var resolved: [String] = []
        var path: NetworkPath = .unreachable("not judged")
        var changes: [NetworkPath] = []
        var lookups = 0
    }

    @Test("only loopback, up, and no default route: localhost is reachable, though the network is not")
    func localhostWithoutDefaultRoute() async throws {
        let namespace = try TestNamespace()
        defer { namespace.delete() }
        try NetworkNamespaces.ip("-n", namespace.name, "link", "set", "lo", "up")
        let outcome = try await onLoopThread(inNamespace: namespace.name) { () throws -> Outcome in
            let loop = RunLoop.current
            var outcome = Outcome()
            let network = try NetworkReachability()
            defer { network.invalidate() }
            outcome.network = network.path

            // The name as such: looked up with the system's resolver (the hosts file), then judged.
            let observed = try NetworkReachability(host: "localhost")
            defer { observed.invalidate() }
            let recorder = PathRecorder(observed)
            try spin(loop, for: .seconds(10)) { !observed.resolvedAddresses.isEmpty }
            outcome.resolved = observed.resolvedAddresses.map(\.ip)
            outcome.path = observed.path
            try recorder.settle(for: .milliseconds(100))
            outcome.changes = recorder.paths
            return outcome
        }
        #expect(outcome.network == .unreachable("no default route"), "the judgement a name used to get")
        #expect(outcome.resolved.contains("127.0.0.1"), "\(outcome.resolved)")
        #expect(outcome.path == .reachable)
        #expect(outcome.changes.isEmpty, "never judged unreachable: \(outcome.changes)")
    }

    @Test("a name follows the route to its address across a veth: link down and up are reported naming it, and each change looks it up again")
    func followsTheRouteToItsAddress() async throws {
        let (outcome, peer, device) = try await withNamespacePair { pair in
            let outcome = try await onLoopThread(inNamespace: pair.client) { () throws -> Outcome in
                let loop = RunLoop.current
                var outcome = Outcome()
                let network = try NetworkReachability()
                defer { network.invalidate() }
                outcome.network = network.path

                let resolver = ScriptedResolver(otherwise: ScriptedResolver.addresses(pair.serverAddress))
                let reachability = try NetworkReachability(host: "chat.test", resolver: resolver)
                reachability.lookupRetryDelay = .milliseconds(20)
                defer { reachability.invalidate() }
                let recorder = PathRecorder(reachability)
                try spin(loop, for: .seconds(10)) { !reachability.resolvedAddresses.isEmpty }
                outcome.resolved = reachability.resolvedAddresses.map(\.ip)
                outcome.path = reachability.path

                try pair.setClientLink(up: false)
                _ = try recorder.waitFor(1, since: loop.now)
                try spin(loop, for: .seconds(10)) { resolver.calls.count >= 2 }
                try pair.setClientLink(up: true)
                _ = try recorder.waitFor(path: .reachable, since: loop.now)
                try spin(loop, for: .seconds(10)) { resolver.calls.count >= 3 }
                try recorder.settle()
                outcome.changes = recorder.paths
                outcome.lookups = resolver.calls.count
                return outcome
            }
            return (outcome, pair.serverAddress, pair.clientDevice)
        }
        #expect(outcome.network == .unreachable("no default route"))
        #expect(outcome.resolved == [peer])
        #expect(outcome.path == .reachable, "on-link, without a default route")
        #expect(outcome.changes.first == .unreachable("chat.test: no route to \(peer); link \(device) down"), "\(outcome.changes)")
        // Coming up may pass through "no carrier" for a moment; then reachable.
        #expect(outcome.changes.last == .reachable, "\(outcome.changes)")
        #expect(outcome.lookups >= 3, "at the start, after the link went down, after it came up: \(outcome.lookups)")
    }
}
