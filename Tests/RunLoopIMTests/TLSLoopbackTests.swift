import RunLoopKit
import RunLoopNet
import RunLoopTLS
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// The IM port over TLS on loopback: a server with ``IMServer/tlsContext`` and clients on
/// ``TLSFrameLink``, with certificates a test CA made for the test (``TestPKI``).
@Suite("IM over TLS on loopback")
struct TLSLoopbackTests {
    @Test("login, a message each way and its delivery, all over TLS")
    func exchange() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try await onLoopThread {
            let loop = RunLoop.current
            let (server, connector) = try secureServer(pki)
            let alice = IMClient(configuration: clientConfiguration("alice"), connector: connector)
            let bob = IMClient(configuration: clientConfiguration("bob"), connector: connector)
            let (aliceLog, bobLog) = (ClientRecorder(), ClientRecorder())
            aliceLog.attach(to: alice)
            bobLog.attach(to: bob)
            alice.start()
            bob.start()
            try #require(try spin(loop) { alice.state == .online && bob.state == .online })
            #expect(server.sessions.allSatisfy { $0.link is TLSFrameLink })
            let id = try alice.send("over TLS", to: .user("bob"))
            try #require(try spin(loop) { bobLog.messages.count == 1 })
            #expect(bobLog.messages.first?.text == "over TLS" && bobLog.messages.first?.id == id)
            try bob.send("and back", to: .user("alice"))
            try #require(try spin(loop) { aliceLog.messages.count == 1 && aliceLog.storedCount == 1 })
            #expect(aliceLog.messages.first?.text == "and back")
            alice.close()
            bob.close()
            try spin(loop) { alice.state == .closed(.userClosed) && bob.state == .closed(.userClosed) }
            server.shutdown()
        }
    }

    @Test(
        "a certificate the client refuses ends it with the check that failed, after one attempt",
        arguments: [
            (TestPKI.Leaf.wrongName, TLSCertificateProblem.Kind.wrongHostName),
            (.selfSigned, .selfSigned),
            (.expired, .expired)
        ])
    func refusedCertificate(leaf: TestPKI.Leaf, kind: TLSCertificateProblem.Kind) async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try await onManualClockLoop(autoAdvances: false) { loop, clock in
            let (server, connector) = try secureServer(pki, leaf)
            var attempts = 0
            let client = IMClient(configuration: clientConfiguration("alice")) { loop, modes, body in
                attempts += 1
                return connector(loop, modes, body)
            }
            client.start()
            try #require(try loop.runUntil(timeout: .seconds(30)) { if case .closed = client.state { true } else { false } })
            guard case .closed(.secureConnectionFailed(.certificateRejected(let problem))) = client.state else {
                Issue.record("closed for another reason: \(client.state)")
                return
            }
            #expect(problem.kind == kind)
            #expect(client.state.description.contains(problem.detail))
            // The normal backoff (50 ms to 400 ms here) would have tried 30 more times by now.
            for _ in 0..<30 {
                clock.advance(by: .seconds(1))
                try loop.run(.default, timeout: .zero)
            }
            #expect(attempts == 1)
            server.shutdown()
        }
    }

    @Test("a plaintext client on the TLS port and a TLS client on a plaintext port fail clearly; the TLS port serves others")
    func wrongSpeakers() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try await onLoopThread {
            let loop = RunLoop.current
            let secure = IMServer(store: InMemoryIMStore())
            secure.tlsContext = try serverContext(pki, .server)
            var ends: [IMSessionEndReason] = []
            secure.onSessionEnd = { _, _, reason in ends.append(reason) }
            try secure.listen()
            let plain = IMServer(store: InMemoryIMStore())
            try plain.listen()
            let trust = try TLSContext(.client(trust: .caFile(pki.caFile)))

            let plaintextClient = makeClient(clientConfiguration("plain"), port: secure.port)
            let plaintextLog = ClientRecorder()
            plaintextLog.attach(to: plaintextClient)
            plaintextClient.start()
            try #require(try spin(loop) { !ends.isEmpty && !plaintextLog.disconnects.isEmpty })
            #expect("\(ends[0])".contains("does not speak TLS"), "\(ends)")
            // Told in its own protocol; an ERROR is retried with backoff like any other.
            #expect(plaintextLog.disconnects[0].1 == .serverError(.badRequest, "this port speaks TLS only: connect with TLS"))
            plaintextClient.close()

            let lost = IMClient(
                configuration: clientConfiguration("lost"),
                connector: TLSFrameLink.connector(host: "127.0.0.1", port: plain.port, context: trust))
            lost.start()
            try #require(try spin(loop) { if case .closed = lost.state { true } else { false } })
            guard case .closed(.secureConnectionFailed(.handshakeFailed(let text))) = lost.state else {
                Issue.record("closed for another reason: \(lost.state)")
                return
            }
            #expect(text.contains("does not speak TLS"), "\(text)")

            let good = IMClient(
                configuration: clientConfiguration("good"),
                connector: TLSFrameLink.connector(host: "localhost", port: secure.port, context: trust))
            good.start()
            try #require(try spin(loop) { good.state == .online })
            good.close()
            try spin(loop) { good.state == .closed(.userClosed) }
            secure.shutdown()
            plain.shutdown()
        }
    }

    @Test("a new context on the server serves new connections while a session on the old one stays up")
    func contextSwap() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try await onLoopThread {
            let loop = RunLoop.current
            let (server, connector) = try secureServer(pki)
            let early = IMClient(configuration: clientConfiguration("early"), connector: connector)
            let earlyLog = ClientRecorder()
            earlyLog.attach(to: early)
            early.start()
            try #require(try spin(loop) { early.state == .online })
            server.tlsContext = try serverContext(pki, .wrongName)
            let late = IMClient(configuration: clientConfiguration("late"), connector: connector)
            late.start()
            try #require(try spin(loop) { if case .closed = late.state { true } else { false } })
            guard case .closed(.secureConnectionFailed(.certificateRejected(let problem))) = late.state, problem.kind == .wrongHostName
            else {
                Issue.record("not refused for its name: \(late.state)")
                return
            }
            try early.send("still here", to: .user("early"))
            try #require(try spin(loop) { earlyLog.storedCount == 1 })
            #expect(earlyLog.disconnects.isEmpty)
            early.close()
            try spin(loop) { early.state == .closed(.userClosed) }
            server.shutdown()
        }
    }

    private func serverContext(_ pki: TestPKI, _ leaf: TestPKI.Leaf) throws -> TLSContext {
        try TLSContext(.server(certificateChainFile: pki.certificate(leaf), privateKeyFile: pki.key(leaf)))
    }

    /// A listening server presenting `leaf`, and a connector to it trusting the test CA.
    private func secureServer(_ pki: TestPKI, _ leaf: TestPKI.Leaf = .server) throws -> (IMServer, IMConnector) {
        let server = IMServer(store: InMemoryIMStore())
        server.tlsContext = try serverContext(pki, leaf)
        try server.listen()
        let trust = try TLSContext(.client(trust: .caFile(pki.caFile)))
        return (server, TLSFrameLink.connector(host: "127.0.0.1", port: server.port, context: trust))
    }
}
