import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopNet

/// NetworkReachability against real link and route changes, in network namespaces made for each test
/// (root only; skipped with the reason otherwise). Every wait is bounded by a generous hang guard. A
/// change is timed from the moment the `ip` command that made it returned (spawning it in a namespace
/// is the test's cost, over a second on a loaded CI machine) to the report, and must be prompt: no
/// periodic check exists, so a report only follows the kernel's netlink message, and one picked up late
/// (by a later change, or a missed message) shows as a time far past the debounce, or as none.
@Suite("Reachability in network namespaces", NetworkNamespaces.available)
struct ReachabilityNamespaceTests {
    struct Steps: Sendable {
        var initial: NetworkPath = .reachable
        var paths: [NetworkPath] = []
        var latencies: [Duration?] = []
        var evaluationsWithoutChange = 0
        var notes: [String] = []
    }

    func expectPrompt(_ latencies: [Duration?], sourceLocation: SourceLocation = #_sourceLocation) {
        for latency in latencies {
            // The debounce is 50 ms; the rest of the bound is a starved machine's scheduling.
            #expect(
                latency.map { $0 < .seconds(3) } == true, "reported after \(String(describing: latency))",
                sourceLocation: sourceLocation)
        }
    }

    @Test("a peer across a veth: the client's link going down and up is reported promptly")
    func clientLinkDownAndUp() async throws {
        let (steps, device, peer) = try await withNamespacePair { pair in
            let steps = try await onLoopThread(inNamespace: pair.client) { () throws -> Steps in
                let loop = RunLoop.current
                let reachability = try NetworkReachability(target: SocketAddress(ip: pair.serverAddress, port: 9000))
                defer { reachability.invalidate() }
                let recorder = PathRecorder(reachability)
                var steps = Steps(initial: reachability.path)
                var start: LoopInstant
                try pair.setClientLink(up: false)
                start = loop.now
                steps.latencies.append(try recorder.waitFor(1, since: start))
                try pair.setClientLink(up: true)
                start = loop.now
                steps.latencies.append(try recorder.waitFor(path: .reachable, since: start))
                try recorder.settle()
                steps.paths = recorder.paths
                return steps
            }
            return (steps, pair.clientDevice, pair.serverAddress)
        }
        #expect(steps.initial == .reachable)
        // An administrative down removes the link's routes: the kernel has no route any more, and the
        // reason names the link that is down.
        #expect(steps.paths.first == .unreachable("no route to \(peer); link \(device) down"), "\(steps.paths)")
        // Coming up may pass through "no carrier" for a moment; then reachable, and nothing after.
        #expect(steps.paths.last == .reachable, "\(steps.paths)")
        #expect(steps.paths.dropLast().allSatisfy { !$0.isReachable }, "\(steps.paths)")
        expectPrompt(steps.latencies)
    }

    @Test("the peer's end going down takes the client's carrier: routes stay, the link is judged")
    func peerLinkDownIsNoCarrier() async throws {
        let (steps, device) = try await withNamespacePair { pair in
            let steps = try await onLoopThread(inNamespace: pair.client) { () throws -> Steps in
                let loop = RunLoop.current
                let reachability = try NetworkReachability(target: SocketAddress(ip: pair.serverAddress, port: 0))
                defer { reachability.invalidate() }
                let recorder = PathRecorder(reachability)
                var steps = Steps(initial: reachability.path)
                var start: LoopInstant
                try pair.setServerLink(up: false)
                start = loop.now
                steps.latencies.append(try recorder.waitFor(1, since: start))
                let routes = try pair.inClient("route", "show", "dev", pair.clientDevice)
                steps.notes.append(routes)
                try pair.setServerLink(up: true)
                start = loop.now
                steps.latencies.append(try recorder.waitFor(path: .reachable, since: start))
                try recorder.settle()
                steps.paths = recorder.paths
                return steps
            }
            return (steps, pair.clientDevice)
        }
        #expect(steps.initial == .reachable)
        #expect(steps.paths == [.unreachable("link \(device) has no carrier"), .reachable])
        #expect(steps.notes.first?.contains("linkdown") == true, "the kernel keeps the route, flagged: \(steps.notes)")
        expectPrompt(steps.latencies)
    }

    @Test("without a target: reachable exactly while a default route with a working link exists")
    func defaultRoute() async throws {
        let (steps, device) = try await withNamespacePair { pair in
            let steps = try await onLoopThread(inNamespace: pair.client) { () throws -> Steps in
                let loop = RunLoop.current
                let reachability = try NetworkReachability()
                defer { reachability.invalidate() }
                let recorder = PathRecorder(reachability)
                var steps = Steps(initial: reachability.path)
                var start: LoopInstant
                try pair.addClientDefaultRoute()
                start = loop.now
                steps.latencies.append(try recorder.waitFor(path: .reachable, since: start))
                try pair.setClientLink(up: false)
                start = loop.now
                steps.latencies.append(try recorder.waitFor(2, since: start))
                steps.paths.append(recorder.paths[1])
                // The kernel brings the connected route back, not the default route that went with the
                // link: "no default route", now without a link to blame.
                try pair.setClientLink(up: true, restoringDefaultRoute: false)
                start = loop.now
                steps.latencies.append(try recorder.waitFor(path: .unreachable("no default route"), since: start))
                steps.notes.append(try pair.inClient("route", "show", "default"))
                try pair.addClientDefaultRoute()
                start = loop.now
                steps.latencies.append(try recorder.waitFor(path: .reachable, since: start))
                try pair.removeClientDefaultRoute()
                start = loop.now
                steps.latencies.append(try recorder.waitFor(path: .unreachable("no default route"), since: start))
                try recorder.settle()
                steps.paths.append(contentsOf: recorder.paths)
                return steps
            }
            return (steps, pair.clientDevice)
        }
        #expect(steps.initial == .unreachable("no default route"))
        #expect(steps.paths.first == .unreachable("no default route; link \(device) down"))
        #expect(steps.notes.first == "", "no default route after a bare up: \(steps.notes)")
        #expect(steps.paths.last == .unreachable("no default route"))
        #expect(steps.paths.filter(\.isReachable).count == 2, "reachable twice: \(steps.paths)")
        expectPrompt(steps.latencies)
    }

    @Test("netlink traffic that changes nothing is judged but not reported")
    func unrelatedChangeIsSilent() async throws {
        let steps = try await withNamespacePair { pair in
            try await onLoopThread(inNamespace: pair.client) { () throws -> Steps in
                let reachability = try NetworkReachability(target: SocketAddress(ip: pair.serverAddress, port: 0))
                defer { reachability.invalidate() }
                let recorder = PathRecorder(reachability)
                var steps = Steps(initial: reachability.path)
                let before = reachability.evaluationCount
                try pair.inClient("route", "add", "198.51.100.0/24", "via", pair.serverAddress)
                try pair.inClient("addr", "add", "192.0.2.77/32", "dev", "lo")
                try RunLoop.current.runUntil(timeout: .seconds(15)) { reachability.evaluationCount > before }
                try recorder.settle()
                steps.evaluationsWithoutChange = reachability.evaluationCount - before
                steps.paths = recorder.paths
                return steps
            }
        }
        #expect(steps.initial == .reachable)
        #expect(steps.evaluationsWithoutChange >= 1, "the messages were seen and the path judged again")
        #expect(steps.evaluationsWithoutChange <= 2, "the burst was coalesced")
        #expect(steps.paths.isEmpty, "onChange not called: \(steps.paths)")
    }

    @Test("with debounce zero every read is judged at once; the outcome is the same")
    func noDebounce() async throws {
        let steps = try await withNamespacePair { pair in
            try await onLoopThread(inNamespace: pair.client) { () throws -> Steps in
                let reachability = try NetworkReachability(target: SocketAddress(ip: pair.serverAddress, port: 0))
                reachability.debounce = .zero
                defer { reachability.invalidate() }
                let recorder = PathRecorder(reachability)
                var steps = Steps(initial: reachability.path)
                try pair.setClientLink(up: false)
                _ = try recorder.waitFor(1, since: RunLoop.current.now)
                try recorder.settle()
                try pair.setClientLink(up: true)
                try RunLoop.current.runUntil(timeout: .seconds(15)) { reachability.path == .reachable }
                steps.paths = recorder.paths
                return steps
            }
        }
        #expect(steps.initial == .reachable)
        #expect(steps.paths.first?.isReachable == false)
        #expect(steps.paths.last == .reachable)
    }

    @Test("in an empty namespace nothing is reachable but loopback, and the reason says so")
    func emptyNamespace() async throws {
        let namespace = try TestNamespace()
        defer { namespace.delete() }
        let paths = try await onLoopThread(inNamespace: namespace.name) { () throws -> [NetworkPath] in
            let remote = try NetworkReachability(target: SocketAddress(ip: "10.1.2.3", port: 0))
            let remote6 = try NetworkReachability(target: SocketAddress(ip: "2001:db8::1", port: 0))
            let network = try NetworkReachability()
            let loopback = try NetworkReachability(target: .ipv4Loopback(port: 0))
            let all = [remote, remote6, network, loopback]
            defer { all.forEach { $0.invalidate() } }
            return all.map(\.path)
        }
        #expect(
            paths == [
                .unreachable("no route to 10.1.2.3"),
                .unreachable("no route to 2001:db8::1"),
                .unreachable("no default route"),
                .reachable
            ])
    }

    @Test("the fixture carries TCP from the client namespace to a listener in the server namespace")
    func tcpAcrossTheVeth() async throws {
        let echoed = try await withNamespacePair { pair in
            try await onLoopThread { () throws -> String in
                let loop = RunLoop.current
                // A socket stays in the namespace it was created in: one loop thread can serve both ends.
                try enterNetworkNamespace(pair.server)
                let listener = TCPListener()
                defer { listener.close() }
                listener.onAccept = { _, connection in
                    connection.onData = { connection, bytes in try? connection.write(bytes) }
                }
                try listener.listen(host: pair.serverAddress, port: 0)
                try enterNetworkNamespace(pair.client)
                let client = TCPConnection()
                var received: [UInt8] = []
                var failure: CloseReason?
                client.onConnect = { connection in try? connection.write(Array("ping".utf8)) }
                client.onData = { _, bytes in received += bytes }
                client.onClose = { _, reason in failure = reason }
                client.connect(to: pair.serverAddress, port: listener.port, timeout: .seconds(10))
                try loop.runUntil(timeout: .seconds(15)) { received.count >= 4 || failure != nil }
                client.close(immediately: true)
                return failure.map { "closed: \($0)" } ?? String(decoding: received, as: UTF8.self)
            }
        }
        #expect(echoed == "ping")
    }

    @Test("a fixture is deleted when its test throws, and when it is only let go")
    func fixtureCleansUp() async throws {
        struct Boom: Error {}
        let names = LockedBox<[String]>([])
        await #expect(throws: Boom.self) {
            try await withNamespacePair { pair in
                names.set([pair.client, pair.server])
                throw Boom()
            }
        }
        do {
            let pair = try NamespacePair()
            names.update { $0 += [pair.client, pair.server] }
        }
        let listed = try NetworkNamespaces.list()
        #expect(names.get().count == 4)
        #expect(names.get().allSatisfy { !listed.contains($0) }, "left behind: \(listed)")
    }
}
