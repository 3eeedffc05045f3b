import RunLoopKit
import RunLoopNet
import RunLoopTLS
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// `wss://`: the WebSocket server and client over a TLS session on 127.0.0.1, with certificates from
/// a test CA, and what a TLS port does with peers that do not speak TLS or never finish.
@Suite("WebSocket over TLS")
struct SecureWebSocketTests {
    @Test("a client verifying the test CA exchanges messages with a TLS server, and both see a clean close")
    func exchangeAndCleanClose() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (echoed, client, server, flags) = try await onLoopThread {
            let loop = RunLoop.current
            var serverInfo: WebSocketCloseInfo?
            var serverIsTLS = false
            let listener = try echoServer { serverInfo = $0 }
            listener.tlsContext = try Self.serverContext(pki)
            listener.onConnection = { [accept = listener.onConnection] server, connection in
                serverIsTLS = connection.isTLS
                accept?(server, connection)
            }
            var echoed: [WebSocketMessage] = []
            var clientInfo: WebSocketCloseInfo?
            let client = WebSocketConnection(tls: try TLSContext(.client(trust: .caFile(pki.caFile))))
            client.onOpen = { client in
                try? client.send(text: "over TLS")
                try? client.send(binary: Array(repeating: 7, count: 40_000))
            }
            client.onMessage = { client, message in
                echoed.append(message)
                if echoed.count == 2 { client.close(code: .normalClosure, reason: "done") }
            }
            client.onClose = { _, info in clientInfo = info }
            client.connect(host: "localhost", port: listener.port, target: "/ws")
            try spin(loop) { clientInfo != nil && serverInfo != nil }
            return (echoed, clientInfo, serverInfo, (client.isTLS, serverIsTLS))
        }
        #expect(echoed == [.text("over TLS"), .binary(Array(repeating: 7, count: 40_000))])
        #expect(flags == (true, true))
        #expect(client?.wasClean == true, "\(String(describing: client))")
        #expect(server?.wasClean == true, "\(String(describing: server))")
        #expect(server?.code == .normalClosure)
    }

    @Test("a client that does not trust the server's certificate ends with the TLS check that refused it")
    func untrustedServer() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let info = try await onLoopThread {
            let loop = RunLoop.current
            let listener = try echoServer()
            listener.tlsContext = try Self.serverContext(pki)
            var info: WebSocketCloseInfo?
            let client = WebSocketConnection(tls: try TLSContext(.client(trust: .systemStore)))
            client.onClose = { _, closed in info = closed }
            client.connect(host: "localhost", port: listener.port)
            try spin(loop) { info != nil }
            return info
        }
        guard case .tls(.certificateRejected(let problem)) = info?.error else {
            Issue.record("not a refused certificate: \(String(describing: info))")
            return
        }
        #expect(problem.kind == .untrustedIssuer)
        #expect(info?.code == .abnormalClosure)
    }

    @Test("plaintext HTTP to the TLS port is answered 400 in plain text and closed; the port serves TLS after it")
    func plaintextToTheTLSPort() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (head, closed, laterEchoed) = try await onLoopThread {
            let loop = RunLoop.current
            let listener = try echoServer()
            listener.tlsContext = try Self.serverContext(pki)
            let plain = RawPeer(port: listener.port)
            try spin(loop) { plain.closed != nil }
            let later = try Self.echoOnce(port: listener.port, pki: pki, loop: loop)
            return (plain.head, plain.closed, later)
        }
        #expect(head?.hasPrefix("HTTP/1.1 400 Bad Request\r\n") == true, "\(String(describing: head))")
        #expect(head?.contains("Content-Type: text/plain") == true)
        #expect(closed == .peerClosed)
        #expect(laterEchoed == .text("still here"))
    }

    @Test("garbage instead of a ClientHello closes that connection only")
    func garbage() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (closed, laterEchoed) = try await onLoopThread {
            let loop = RunLoop.current
            let listener = try echoServer()
            listener.tlsContext = try Self.serverContext(pki)
            // A TLS record header announcing a handshake, then bytes that are no ClientHello.
            let garbage: [UInt8] = [22, 3, 1, 0, 200] + (0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37) }
            let peer = RawPeer(port: listener.port, request: garbage)
            try spin(loop) { peer.closed != nil }
            let later = try Self.echoOnce(port: listener.port, pki: pki, loop: loop)
            return (peer.closed, later)
        }
        #expect(closed != nil)
        #expect(laterEchoed == .text("still here"))
    }

    @Test("a client that connects and never finishes the TLS handshake is dropped at the WebSocket handshake timeout, on the loop's clock")
    func stalledHandshake() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (elapsed, refusals) = try await onManualClockLoop { loop, _ in
            let listener = try echoServer(configuration: WebSocketConfiguration(handshakeTimeout: .seconds(3)))
            listener.tlsContext = try Self.serverContext(pki)
            var refusals: [Int] = []
            listener.onRefused = { _, refusal in refusals.append(refusal.status) }
            let start = loop.now
            var closedAt: LoopInstant?
            let stalled = TCPConnection()
            stalled.onConnect = { tcp in try? tcp.write([22, 3, 1, 0, 100]) }
            stalled.onData = { _, _ in }
            stalled.onClose = { _, _ in closedAt = loop.now }
            stalled.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            try spin(loop, for: .seconds(60)) { closedAt != nil }
            return (closedAt.map { $0 - start }, refusals)
        }
        let dropped = try #require(elapsed)
        // The head's deadline (3 s), well before TLS's own handshake limit (10 s).
        #expect(dropped >= .seconds(3) && dropped < .seconds(4), "\(dropped)")
        #expect(refusals == [408])
    }

    private static func serverContext(_ pki: TestPKI) throws -> TLSContext {
        var configuration = TLSConfiguration.server(certificateChainFile: pki.certificate(.server), privateKeyFile: pki.key(.server))
        configuration.applicationProtocols = ["http/1.1"]
        return try TLSContext(configuration)
    }

    /// One `wss://` round trip: what the server echoed.
    private static func echoOnce(port: UInt16, pki: TestPKI, loop: RunLoop) throws -> WebSocketMessage? {
        var echoed: WebSocketMessage?
        let client = WebSocketConnection(tls: try TLSContext(.client(trust: .caFile(pki.caFile))))
        client.onOpen = { try? $0.send(text: "still here") }
        client.onMessage = { client, message in
            echoed = message
            client.close()
        }
        client.connect(host: "127.0.0.1", port: port)
        try spin(loop) { echoed != nil }
        return echoed
    }
}
