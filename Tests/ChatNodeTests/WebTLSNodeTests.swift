import ChatNodeKit
import Foundation
import Glibc
import RunLoopIM
import RunLoopIMCore
import RunLoopIMWebSocket
import RunLoopKit
import RunLoopTLS
import RunLoopTesting
import Testing

/// The web port with TLS: HTTPS for the page and `wss://` for the browser's session, from the same
/// certificate as the IM port, checked with Python's `ssl` (an independent TLS stack) and our client.
@Suite("chat node: HTTPS and wss:// on the web port")
struct WebTLSNodeTests {
    @Test("Python's ssl gets the page over HTTPS (ALPN http/1.1, TLS 1.3); our client logs in and sends over wss://; plaintext HTTP is answered 400")
    func pageAndSession() async throws {
        let pki = try TestPKI()
        let path = temporaryDatabase()
        defer {
            pki.remove()
            removeDatabase(path)
        }
        try await onLoopThread {
            let loop = RunLoopKit.RunLoop.current
            var configuration = nodeConfiguration(path, httpPort: 0)
            configuration.tls = try ChatNodeTLS(certificateChainFile: pki.certificate(.server), privateKeyFile: pki.key(.server))
            let node = try ChatNode(configuration: configuration)
            try node.start()
            defer { node.abort() }
            let webPort = try #require(node.webPort)
            #expect(node.pageURL == "https://127.0.0.1:\(webPort)/")

            let https = try WebTLSProbe.run(port: webPort, pki: pki)
            try spin(loop) { https.finished }
            #expect(https.output.contains("alpn http/1.1 TLSv1.3"), "\(https.output)")
            #expect(https.output.contains("status HTTP/1.1 200 OK"), "\(https.output)")
            #expect(https.output.contains("plaintext HTTP/1.1 400 Bad Request"), "\(https.output)")

            let trust = try TLSContext(.client(trust: .caFile(pki.caFile)))
            let alice = IMClient(
                configuration: clientConfiguration("alice"),
                connector: WebSocketFrameLink.connector(host: "localhost", port: webPort, tls: trust))
            var stored = 0
            alice.onDelivery = { _, _, state in if case .stored = state { stored += 1 } }
            alice.start()
            try #require(try spin(loop) { alice.state == .online }, "\(alice.state)")
            try alice.send("over wss", to: .user("alice"))
            try #require(try spin(loop) { stored == 1 })
            alice.close()
            try spin(loop) { alice.state == .closed(.userClosed) }
        }
    }

    @Test("serve --tls-cert without --no-http serves HTTPS on the web port, and SIGHUP reloads its certificate too")
    func serveReloadsTheWebPort() async throws {
        let pki = try TestPKI()
        let path = temporaryDatabase()
        let log = temporaryPath("web-tls-log")
        defer {
            pki.remove()
            removeDatabase(path)
            try? FileManager.default.removeItem(atPath: log)
        }
        let live = (certificate: "\(pki.directory)/live.pem", key: "\(pki.directory)/live.key")
        try FileManager.default.copyItem(atPath: pki.certificate(.server), toPath: live.certificate)
        try FileManager.default.copyItem(atPath: pki.key(.server), toPath: live.key)
        let node = try ServerProcess(
            executable: ChatNodeBinary.path,
            [
                "serve", "--host", "127.0.0.1", "--port", "0", "--http-port", "0", "--database", path, "--scrypt-cost", "4",
                "--log-level", "info", "--tls-cert", live.certificate, "--tls-key", live.key
            ], errorLog: log)
        defer { node.kill() }
        let webPort = try #require(Self.pagePort(inLog: log))

        let before = try WebTLSProbe.run(port: webPort, pki: pki)
        #expect(before.wait().contains("status HTTP/1.1 200 OK"), "\(before.output)")

        // The wrong-name certificate: a verifying client refuses it, which shows which one is served.
        for (from, to) in [(pki.certificate(.wrongName), live.certificate), (pki.key(.wrongName), live.key)] {
            try FileManager.default.removeItem(atPath: to)
            try FileManager.default.copyItem(atPath: from, toPath: to)
        }
        Glibc.kill(node.process.processIdentifier, SIGHUP)
        var after = ""
        // The signal is handled on the node's loop: a connection made before that still gets the old one.
        for _ in 0..<50 {
            after = try WebTLSProbe.run(port: webPort, pki: pki).wait()
            if after.contains("Hostname mismatch") { break }
            usleep(20_000)
        }
        #expect(after.contains("Hostname mismatch"), "\(after)")
    }

    /// The web port from the node's "page https://…:PORT/" log line.
    private static func pagePort(inLog log: String) -> UInt16? {
        for _ in 0..<500 {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: "page https://127.0.0.1:") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                return UInt16(digits)
            }
            usleep(10_000)
        }
        return nil
    }
}

/// Python's `ssl` against a web port: the ALPN protocol and version it agreed, the status line of
/// `GET /`, and the status line a plaintext request gets.
private struct WebTLSProbe {
    let process: PeerProcess

    static let script = """
        import socket, ssl, sys
        port, ca = int(sys.argv[1]), sys.argv[2]
        context = ssl.create_default_context(cafile=ca)
        context.set_alpn_protocols(["h2", "http/1.1"])
        try:
            with context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost") as tls:
                print("alpn", tls.selected_alpn_protocol(), tls.version(), flush=True)
                tls.sendall(b"GET / HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
                answer = b""
                while chunk := tls.recv(65536):
                    answer += chunk
                print("status", answer.split(b"\\r\\n")[0].decode(), flush=True)
        except ssl.SSLError as error:
            print("refused", error, flush=True)
        with socket.create_connection(("127.0.0.1", port)) as plain:
            plain.sendall(b"GET / HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
            answer = b""
            while chunk := plain.recv(65536):
                answer += chunk
            print("plaintext", answer.split(b"\\r\\n")[0].decode(), flush=True)
        print("done", flush=True)
        """

    static func run(port: UInt16, pki: TestPKI) throws -> WebTLSProbe {
        WebTLSProbe(process: try PeerProcess("/usr/bin/env", ["python3", "-c", script, "\(port)", pki.caFile], directory: pki.directory))
    }

    var output: String { process.output }
    var finished: Bool { output.contains("done") || !process.isRunning }

    /// Waits up to 10 s for the end (the node runs in another process).
    func wait() -> String {
        for _ in 0..<1000 where !finished { usleep(10_000) }
        return output
    }
}
