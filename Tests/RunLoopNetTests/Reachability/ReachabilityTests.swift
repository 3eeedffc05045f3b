import Glibc
import Logging
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopNet

/// NetworkReachability on the test's own network: only what holds on any host (loopback, a scope that
/// names no interface, the socket's life). Link and route changes are in ReachabilityNamespaceTests.
@Suite("Reachability")
struct ReachabilityTests {
    @Test("a loopback target is reachable, and stays so without onChange")
    func loopbackIsReachable() async throws {
        let outcome = try await onLoopThread { () throws -> ([NetworkPath], Int) in
            let v4 = try NetworkReachability(target: .ipv4Loopback(port: 0))
            let v6 = try NetworkReachability(target: .ipv6Loopback(port: 80))
            let mapped = try NetworkReachability(target: SocketAddress(ip: "::ffff:127.0.0.2", port: 0))
            defer { [v4, v6, mapped].forEach { $0.invalidate() } }
            var calls = 0
            for reachability in [v4, v6, mapped] { reachability.onChange = { _, _ in calls += 1 } }
            try RunLoop.current.runUntil(timeout: .milliseconds(150)) { false }
            return ([v4.path, v6.path, mapped.path], calls)
        }
        #expect(outcome.0 == [.reachable, .reachable, .reachable])
        #expect(outcome.1 == 0)
    }

    @Test("invalidate takes the source off the loop, closes both sockets and is idempotent")
    func invalidateIsIdempotent() async throws {
        let outcome = try await onLoopThread { () throws -> (Bool, Bool, Bool, NetworkPath, Bool) in
            let loop = RunLoop.current
            let reachability = try NetworkReachability(loop: loop, modes: [.default], target: .ipv4Loopback(port: 0))
            reachability.onChange = { _, _ in }
            let descriptors = reachability.descriptors
            let identities = descriptors.map(identity(of:))
            reachability.invalidate()
            reachability.invalidate()
            // The source closes its descriptor once the loop has stopped watching it: one pass.
            try loop.run(.default, timeout: .milliseconds(10))
            let closed = zip(descriptors, identities).allSatisfy { identity(of: $0) != $1 }
            return (descriptors.count == 2, closed, reachability.isValid, reachability.path, reachability.onChange == nil)
        }
        #expect(outcome.0, "a monitor and a query socket")
        #expect(outcome.1, "both descriptors closed")
        #expect(!outcome.2)
        #expect(outcome.3 == .reachable, "the last path is kept")
        #expect(outcome.4, "onChange dropped")
    }

    @Test("letting go of a reachability without invalidating it closes its sockets too")
    func deinitCloses() async throws {
        let closed = try await onLoopThread { () throws -> Bool in
            let loop = RunLoop.current
            var descriptors: [Int32] = []
            var identities: [[UInt64]?] = []
            do {
                let reachability = try NetworkReachability(loop: loop, modes: [.default], target: .ipv4Loopback(port: 0))
                descriptors = reachability.descriptors
                identities = descriptors.map(identity(of:))
            }
            try loop.run(.default, timeout: .milliseconds(10))
            return !descriptors.isEmpty && zip(descriptors, identities).allSatisfy { identity(of: $0) != $1 }
        }
        #expect(closed)
    }

    @Test("a netlink socket that cannot be opened is a typed NetError.system")
    func socketFailure() async throws {
        let error = try await onLoopThread { () -> NetError? in
            do throws(NetError) {
                // Netlink protocol 99 does not exist: socket() fails as it would under seccomp.
                _ = try NetworkReachability(
                    loop: .current, modes: [.common], target: nil,
                    logger: .init(label: "test"), netlinkProtocol: 99)
                return nil
            } catch {
                return error
            }
        }
        guard let error, case .system(let code, let operation) = error else {
            Issue.record("expected NetError.system, got \(String(describing: error))")
            return
        }
        #expect(code != 0)
        #expect(operation.contains("AF_NETLINK"))
    }

    @Test("a link-local target on an interface that does not exist is unreachable, with the reason")
    func noSuchInterface() async throws {
        let path = try await onLoopThread { () throws -> NetworkPath in
            let target = try #require(SocketAddress(ip: "fe80::1%99999", port: 0))
            let reachability = try NetworkReachability(target: target)
            defer { reachability.invalidate() }
            return reachability.path
        }
        #expect(!path.isReachable)
        #expect(path.reason.hasPrefix("no route to fe80::1%99999"), "\(path)")
    }

    @Test("the path describes itself for people")
    func descriptions() {
        #expect(NetworkPath.reachable.description == "reachable")
        #expect(NetworkPath.unreachable("no default route").description == "unreachable: no default route")
        #expect(NetworkPath.reachable.isReachable)
        #expect(!NetworkPath.unreachable("x").isReachable)
    }
}
