import RunLoopKit
import RunLoopNet
import RunLoopTLS
import RunLoopTesting
import Testing

/// Our client and our server, each its own side of one loop: the handshake, application data both
/// ways across many records, ALPN, and a close_notify each way.
@Suite struct EchoTests {
    struct Outcome: Sendable {
        var echoed = 0
        var intact = false
        var clientReason: TLSCloseReason?
        var serverReasons: [TLSCloseReason] = []
        var clientProtocol: String?
        var serverProtocol: String?
        var version: TLSVersion?
    }

    @Test("a megabyte each way crosses many records intact; the client's close_notify closes both sides in order")
    func largeEchoAndCleanClose() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let outcome = try await onLoopThread {
            let loop = RunLoop.current
            var outcome = Outcome()
            let server = try EchoTLSServer(context: pki.serverContext(protocols: ["im/1"]))
            server.onOpen = { session in outcome.serverProtocol = session.applicationProtocol }
            let payload = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
            let client = CollectingClient(context: try pki.clientContext(protocols: ["h2", "im/1"]))
            client.connect(port: server.port, serverName: "localhost")
            // Written while connecting: it waits for the handshake.
            try client.tls.write(payload)
            try spin(loop) { client.received.count >= payload.count || client.closeReason != nil }
            outcome.echoed = client.received.count
            outcome.intact = client.received == payload
            outcome.clientProtocol = client.tls.applicationProtocol
            outcome.version = client.tls.version
            client.tls.close()
            try spin(loop) { client.closeReason != nil && server.closes.count == 1 }
            outcome.clientReason = client.closeReason
            outcome.serverReasons = server.closes
            return outcome
        }
        #expect(outcome.echoed == 1 << 20 && outcome.intact)
        #expect(outcome.clientProtocol == "im/1" && outcome.serverProtocol == "im/1")
        #expect(outcome.version == .v1_3)
        #expect(outcome.clientReason == .closed)
        #expect(outcome.serverReasons == [.peerClosed])
    }

    @Test("the server's close_notify reaches the client as peerClosed; the server's own close ends closed")
    func serverClosesFirst() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (received, clientReason, serverReasons) = try await onLoopThread {
            let loop = RunLoop.current
            let server = try EchoTLSServer(context: pki.serverContext())
            server.onOpen = { session in
                try? session.write(Array("bye".utf8))
                session.close()
            }
            let client = CollectingClient(context: try pki.clientContext())
            client.connect(port: server.port)
            try spin(loop) { client.closeReason != nil && server.closes.count == 1 }
            return (client.received, client.closeReason, server.closes)
        }
        #expect(received == Array("bye".utf8))
        #expect(clientReason == .peerClosed)
        #expect(serverReasons == [.closed])
    }

    @Test("a server offering only other ALPN protocols refuses the client with an alert")
    func alpnWithoutOverlapIsRefused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (clientReason, serverReasons) = try await onLoopThread {
            let loop = RunLoop.current
            let server = try EchoTLSServer(context: pki.serverContext(protocols: ["im/1"]))
            let client = CollectingClient(context: try pki.clientContext(protocols: ["h2"]))
            client.connect(port: server.port)
            try spin(loop) { client.closeReason != nil && server.closes.count == 1 }
            return (client.closeReason, server.closes)
        }
        guard case .failed(.alertReceived(let alert)) = clientReason else {
            Issue.record("client ended \(String(describing: clientReason))")
            return
        }
        #expect(alert.contains("no application protocol"))
        #expect(serverReasons.count == 1 && serverReasons.first?.failure != nil)
    }

    @Test("a paused session delivers nothing until resumed, then everything")
    func pauseHoldsDecryptedData() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (whilePaused, afterResume) = try await onLoopThread {
            let loop = RunLoop.current
            let server = try EchoTLSServer(context: pki.serverContext())
            let client = CollectingClient(context: try pki.clientContext())
            client.connect(port: server.port)
            try spin(loop) { client.opened }
            try client.tls.write(Array(repeating: 7, count: 50_000))
            try spin(loop) { client.received.count > 0 }
            client.tls.pauseReading()
            let seen = client.received.count
            try client.tls.write(Array(repeating: 8, count: 50_000))
            try spin(loop, for: .milliseconds(200)) { false }
            let whilePaused = client.received.count - seen
            client.tls.resumeReading()
            try spin(loop) { client.received.count == 100_000 }
            client.tls.close()
            return (whilePaused, client.received.count)
        }
        #expect(whilePaused == 0)
        #expect(afterResume == 100_000)
    }

    @Test("a context swapped on the server serves new connections while a live session keeps the old one")
    func replacedContextLeavesLiveSessions() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (oldEcho, newProblem) = try await onLoopThread {
            let loop = RunLoop.current
            let server = try EchoTLSServer(context: pki.serverContext())
            let first = CollectingClient(context: try pki.clientContext())
            first.connect(port: server.port)
            try spin(loop) { first.opened }
            server.context = try pki.serverContext(.wrongName)
            let second = CollectingClient(context: try pki.clientContext())
            second.connect(port: server.port)
            try spin(loop) { second.closeReason != nil }
            try first.tls.write(Array("still here".utf8))
            try spin(loop) { first.received.count == 10 || first.closeReason != nil }
            first.tls.close()
            return (String(decoding: first.received, as: UTF8.self), certificateProblem(second.closeReason))
        }
        #expect(oldEcho == "still here")
        #expect(newProblem == .wrongHostName)
    }
}
