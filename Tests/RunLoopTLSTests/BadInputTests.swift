import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

@testable import RunLoopTLS

/// What a TLS port makes of peers that do not complete a handshake, and what our client makes of a
/// port that does not speak TLS: each ends that one connection with an error that names the cause.
@Suite struct BadInputTests {
    /// A real ClientHello, from a client session of our own that never meets a server.
    static func clientHello(_ pki: TestPKI) throws -> [UInt8] {
        let engine = try TLSEngine(context: pki.clientContext(), serverName: "localhost")
        #expect(engine.handshake() == .needsMoreInput)
        return engine.takeOutput()
    }

    /// Sends `bytes` to a TLS echo server from a raw TCP connection (then ends it when `thenClose`),
    /// and returns how the server's session ended.
    static func serverEnd(
        of bytes: [UInt8], thenClose: Bool, pki: TestPKI
    ) async throws -> TLSCloseReason? {
        try await onLoopThread {
            let loop = RunLoop.current
            let server = try EchoTLSServer(context: pki.serverContext())
            let raw = TCPConnection()
            raw.onConnect = { raw in
                try? raw.write(bytes)
                if thenClose { raw.close() }
            }
            raw.onData = { _, _ in }
            raw.connect(to: "127.0.0.1", port: server.port)
            try spin(loop) { server.closes.count == 1 }
            raw.close(immediately: true)
            return server.closes.first
        }
    }

    @Test("garbage instead of a ClientHello is not TLS")
    func garbageInsteadOfClientHello() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let garbage = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }
        let reason = try await Self.serverEnd(of: garbage, thenClose: false, pki: pki)
        guard case .failed(.notTLS) = reason else {
            Issue.record("ended \(String(describing: reason))")
            return
        }
    }

    @Test("plaintext (an HTTP request) to the TLS port is not TLS")
    func plaintextToTheTLSPort() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let reason = try await Self.serverEnd(of: Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), thenClose: false, pki: pki)
        guard case .failed(.notTLS(let why)) = reason else {
            Issue.record("ended \(String(describing: reason))")
            return
        }
        #expect(why.contains("http request"))
    }

    @Test("half a ClientHello and then the end of the connection is a handshake cut short")
    func truncatedHandshake() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let hello = try Self.clientHello(pki)
        let reason = try await Self.serverEnd(of: Array(hello[..<(hello.count / 2)]), thenClose: true, pki: pki)
        #expect(reason == .failed(.closedDuringHandshake))
    }

    @Test("a client that stalls mid-handshake is dropped at the handshake timeout, on the loop's clock")
    func stalledHandshakeTimesOut() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let hello = try Self.clientHello(pki)
        let (reason, elapsed, rawReason) = try await onManualClockLoop { loop, clock in
            let server = try EchoTLSServer(context: pki.serverContext(handshakeTimeout: .seconds(5)))
            var acceptedAt: LoopInstant?
            server.listener.onAccept = { [accept = server.listener.onAccept] listener, tcp in
                acceptedAt = loop.now
                accept?(listener, tcp)
            }
            var closedAt: LoopInstant?
            var rawReason: CloseReason?
            let raw = TCPConnection()
            raw.onConnect = { raw in try? raw.write(Array(hello[..<20])) }
            raw.onData = { _, _ in }
            raw.onClose = { _, reason in rawReason = reason }
            raw.connect(to: "127.0.0.1", port: server.port, timeout: nil)
            try spin(loop, for: .seconds(60)) {
                if closedAt == nil, !server.closes.isEmpty { closedAt = loop.now }
                return closedAt != nil && rawReason != nil
            }
            return (server.closes.first, closedAt.flatMap { closed in acceptedAt.map { closed - $0 } }, rawReason)
        }
        #expect(reason == .failed(.handshakeTimedOut))
        #expect(elapsed == .seconds(5))
        #expect(rawReason == .failed(.connectionReset))
    }

    @Test("our client on a port that answers in plaintext says the peer does not speak TLS")
    func tlsToAPlaintextPort() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let reason = try await onLoopThread {
            let loop = RunLoop.current
            let plain = TCPListener()
            plain.onAccept = { _, tcp in
                tcp.onData = { tcp, _ in
                    try? tcp.write(Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8))
                    tcp.close()
                }
            }
            try plain.listen()
            let client = CollectingClient(context: try pki.clientContext())
            client.connect(port: plain.port)
            try spin(loop) { client.closeReason != nil }
            return client.closeReason
        }
        guard case .failed(.notTLS) = reason else {
            Issue.record("ended \(String(describing: reason))")
            return
        }
    }

    @Test("a TLS 1.1 client (openssl s_client -tls1_1) is refused for its protocol version")
    func tls11IsRefused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (reason, output) = try await onLoopThread {
            let loop = RunLoop.current
            let server = try EchoTLSServer(context: pki.serverContext())
            // Security level 0: OpenSSL 3 would not even offer TLS 1.1 otherwise.
            let peer = try PeerProcess(
                "/usr/bin/openssl",
                ["s_client", "-connect", "127.0.0.1:\(server.port)", "-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"],
                directory: pki.directory)
            try spin(loop) { server.closes.count == 1 && !peer.isRunning }
            return (server.closes.first, peer.output)
        }
        guard case .failed(.protocolVersion) = reason else {
            Issue.record("ended \(String(describing: reason)); s_client said: \(output)")
            return
        }
        #expect(output.contains("alert protocol version"))
    }
}
