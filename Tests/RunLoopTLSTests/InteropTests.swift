import RunLoopKit
import RunLoopNet
import RunLoopTLS
import RunLoopTesting
import Testing

/// Other TLS implementations as peers, as processes the test starts: OpenSSL's `s_client` and
/// `s_server`, and Python's `ssl` module.
@Suite struct InteropTests {
    @Test(
        "openssl s_client verifies our server's chain and exchanges data both ways, over TLS 1.2 and 1.3",
        arguments: ["TLSv1.2", "TLSv1.3"])
    func opensslClientAgainstOurServer(version: String) async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (output, serverReceived) = try await onLoopThread {
            let loop = RunLoop.current
            let server = try EchoTLSServer(context: pki.serverContext())
            server.echoes = false
            server.onOpen = { session in try? session.write(Array("welcome\n".utf8)) }
            let peer = try PeerProcess(
                "/usr/bin/openssl",
                [
                    "s_client", "-connect", "127.0.0.1:\(server.port)", "-CAfile", pki.caFile, "-verify_return_error", "-ign_eof",
                    version == "TLSv1.2" ? "-tls1_2" : "-tls1_3"
                ],
                directory: pki.directory)
            peer.send("hello\n")
            try spin(loop) { server.receivedBytes >= 6 && peer.output.contains("welcome") }
            // Our close_notify ends s_client's session, and s_client then exits by itself.
            server.sessions.first?.close()
            try spin(loop) { !peer.isRunning && server.closes.count == 1 }
            return (peer.output, server.receivedBytes)
        }
        #expect(serverReceived == 6)
        #expect(output.contains("Verify return code: 0 (ok)"))
        #expect(output.contains("welcome"))
        #expect(output.contains("New, \(version), Cipher is"))
    }

    @Test("our server picks the cipher suite by its own order: a TLS 1.2 client listing AES-128 first gets AES-256")
    func serverCipherOrder() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let output = try await onLoopThread {
            let loop = RunLoop.current
            let server = try EchoTLSServer(context: pki.serverContext())
            let peer = try PeerProcess(
                "/usr/bin/openssl",
                [
                    "s_client", "-connect", "127.0.0.1:\(server.port)", "-CAfile", pki.caFile, "-tls1_2",
                    "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384"
                ],
                directory: pki.directory)
            try spin(loop) { peer.output.contains("Cipher is") }
            peer.closeInput()
            try spin(loop) { !peer.isRunning }
            return peer.output
        }
        #expect(output.contains("Cipher is ECDHE-ECDSA-AES256-GCM-SHA384"), "\(output)")
    }

    @Test("our client answers openssl s_server's renegotiation request (its r command) with no_renegotiation")
    func renegotiationIsRefused() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        // -msg: s_server prints every handshake message and alert it sends and receives.
        let peer = try PeerProcess(
            "/usr/bin/openssl",
            ["s_server", "-accept", "127.0.0.1:0", "-cert", pki.certificate(.server), "-key", pki.key(.server), "-tls1_2", "-msg"],
            directory: pki.directory)
        let port = try peer.acceptPort()
        let (opened, closeReason) = try await onLoopThread {
            let loop = RunLoop.current
            let client = CollectingClient(context: try pki.clientContext())
            client.connect(port: port)
            try spin(loop) { client.opened || client.closeReason != nil }
            peer.send("r\n")
            // s_server takes the refusal as the end of the session.
            try spin(loop) { client.closeReason != nil }
            return (client.opened, client.closeReason)
        }
        #expect(opened)
        #expect(peer.output.contains("HelloRequest"))
        #expect(peer.output.contains("<<< TLS 1.2, Alert [length 0002], warning no_renegotiation"))
        guard case .failed(.alertReceived) = closeReason else {
            Issue.record("the client's session ended \(String(describing: closeReason))")
            return
        }
    }

    @Test("our client verifies openssl s_server's certificate and gets its reversed echo")
    func ourClientAgainstOpensslServer() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let peer = try PeerProcess(
            "/usr/bin/openssl",
            ["s_server", "-accept", "127.0.0.1:0", "-cert", pki.certificate(.server), "-key", pki.key(.server), "-rev"],
            directory: pki.directory)
        let port = try peer.acceptPort()
        let (received, opened) = try await onLoopThread {
            let loop = RunLoop.current
            let client = CollectingClient(context: try pki.clientContext())
            client.connect(port: port)
            try spin(loop) { client.opened || client.closeReason != nil }
            try client.tls.write(Array("hello\n".utf8))
            try spin(loop) { String(decoding: client.received, as: UTF8.self).contains("olleh") || client.closeReason != nil }
            client.tls.close(immediately: true)
            return (String(decoding: client.received, as: UTF8.self), client.opened)
        }
        #expect(opened)
        #expect(received.contains("olleh"))
    }

    @Test("Python's ssl client verifies our server, sends, reads the echo and unwraps cleanly")
    func pythonClientAgainstOurServer() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let script = """
            import socket, ssl, sys
            context = ssl.create_default_context(cafile=sys.argv[2])
            with socket.create_connection(("127.0.0.1", int(sys.argv[1]))) as raw:
                with context.wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(b"ping from python")
                    got = b""
                    while len(got) < 16:
                        got += tls.recv(100)
                    print("echo:", got.decode(), tls.version())
                    tls.unwrap()
            """
        try pki.write("client.py", script)
        let (output, status, serverReasons) = try await onLoopThread {
            let loop = RunLoop.current
            let server = try EchoTLSServer(context: pki.serverContext())
            let peer = try PeerProcess(
                "/usr/bin/env", ["python3", "client.py", "\(server.port)", pki.caFile], directory: pki.directory)
            peer.closeInput()
            try spin(loop) { !peer.isRunning && server.closes.count == 1 }
            return (peer.output, peer.exitStatus, server.closes)
        }
        #expect(status == 0, "python said: \(output)")
        #expect(output.contains("echo: ping from python TLSv1.3"))
        #expect(serverReasons == [.peerClosed])
    }
}
