import RunLoopKit
import RunLoopNet
import RunLoopTLS
import RunLoopTesting
import Testing

/// Our client refuses a server certificate it cannot trust, with an error that names which check
/// failed, and the server learns that its client refused it.
@Suite struct CertificateTests {
    /// Connects a client trusting the test CA to a server presenting `leaf` (and closes the client if
    /// it got through); how each side ended.
    static func handshake(
        presenting leaf: TestPKI.Leaf, serverName: String? = nil
    ) async throws -> (client: TLSCloseReason?, server: TLSCloseReason?) {
        let pki = try TestPKI()
        defer { pki.remove() }
        return try await onLoopThread {
            let loop = RunLoop.current
            let server = try EchoTLSServer(context: pki.serverContext(leaf))
            let client = CollectingClient(context: try pki.clientContext())
            client.connect(port: server.port, serverName: serverName)
            try spin(loop) { client.opened || (client.closeReason != nil && server.closes.count == 1) }
            if client.opened {
                client.tls.close()
                try spin(loop) { client.closeReason != nil && server.closes.count == 1 }
            }
            return (client.closeReason, server.closes.first)
        }
    }

    @Test("a self-signed server certificate", arguments: [nil, "localhost"])
    func selfSigned(serverName: String?) async throws {
        let (client, server) = try await Self.handshake(presenting: .selfSigned, serverName: serverName)
        #expect(certificateProblem(client) == .selfSigned)
        #expect(client?.description.contains("self-signed certificate") == true)
        #expect(Self.isAlert(server))
    }

    @Test("an expired server certificate")
    func expired() async throws {
        let (client, server) = try await Self.handshake(presenting: .expired)
        #expect(certificateProblem(client) == .expired)
        #expect(client?.description == "failed: certificate verify failed: certificate has expired")
        #expect(Self.isAlert(server))
    }

    @Test("a certificate for another name, checked against an address and against a host name", arguments: [nil, "localhost"])
    func wrongName(serverName: String?) async throws {
        let (client, server) = try await Self.handshake(presenting: .wrongName, serverName: serverName)
        #expect(certificateProblem(client) == .wrongHostName)
        #expect(Self.isAlert(server))
    }

    @Test("the right certificate by address and by host name")
    func rightNames() async throws {
        for name in [nil, "localhost"] {
            let (client, server) = try await Self.handshake(presenting: .server, serverName: name)
            #expect(client == .closed)
            #expect(server == .peerClosed)
        }
    }

    static func isAlert(_ reason: TLSCloseReason?) -> Bool {
        if case .failed(.alertReceived) = reason { return true }
        return false
    }
}
