import ChatNodeKit
import Foundation
import Glibc
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopTLS
import RunLoopTesting
import Testing

/// `chat-node serve --tls-cert --tls-key` as a process: the IM port speaks TLS to `openssl s_client`
/// and to ``IMClient``, SIGHUP loads the files again without dropping a session, and files that
/// cannot be used stop it before it listens.
@Suite("chat-node serve with TLS, the process")
struct TLSNodeTests {
    @Test("openssl s_client completes a verified handshake; a client logs in and sends over TLS")
    func handshakeAndExchange() async throws {
        let files = try NodeFiles()
        defer { files.remove() }
        let (pki, path) = (files.pki, files.database)
        let node = try ServerProcess(executable: ChatNodeBinary.path, serveArguments(path, pki, .server))
        defer { node.kill() }
        let openssl = try PeerProcess(
            "/usr/bin/openssl",
            ["s_client", "-connect", "127.0.0.1:\(node.port)", "-CAfile", pki.caFile, "-verify_return_error"],
            directory: pki.directory)
        try #require(waitFor { openssl.output.contains("Verify return code: 0 (ok)") }, "\(openssl.output)")
        #expect(openssl.output.contains("New, TLSv1.3, Cipher is"), "\(openssl.output)")
        openssl.closeInput()

        try await onLoopThread {
            let loop = RunLoopKit.RunLoop.current
            let trust = try TLSContext(.client(trust: .caFile(pki.caFile)))
            let connector = TLSFrameLink.connector(host: "localhost", port: node.port, context: trust)
            let alice = IMClient(configuration: clientConfiguration("alice"), connector: connector)
            alice.start()
            try #require(try spin(loop) { alice.state == .online })
            try sendToSelfAndClose(alice, loop: loop)
        }
    }

    @Test("chat-node client --tls --ca-file sends over TLS; with the system's store it stops on the unknown issuer, naming it")
    func terminalClient() throws {
        let files = try NodeFiles()
        defer { files.remove() }
        let (pki, path) = (files.pki, files.database)
        let node = try ServerProcess(executable: ChatNodeBinary.path, serveArguments(path, pki, .server))
        defer { node.kill() }
        let client = ["client", "--user", "alice", "--password", "pw", "--host", "localhost", "--port", "\(node.port)", "--tls"]
        let (status, output, _) = try runChatNode(client + ["--ca-file", pki.caFile], input: "/msg alice over TLS\n")
        #expect(status == 0, "\(output)")
        #expect(output.contains("stored"), "\(output)")
        let (refused, refusal, _) = try runChatNode(client, input: "/msg alice over TLS\n")
        #expect(refused != 0)
        #expect(refusal.contains("closed: no secure connection: certificate verify failed: unable to get local issuer certificate"), "\(refusal)")
    }

    @Test("SIGHUP serves new connections the new certificate, keeps a session up, and keeps the old one when the new file is bad")
    func reloadOnHangup() async throws {
        let files = try NodeFiles()
        defer { files.remove() }
        let (pki, path) = (files.pki, files.database)
        let live = (certificate: "\(pki.directory)/live.pem", key: "\(pki.directory)/live.key")
        try install(pki, .server, at: live)
        let node = try ServerProcess(
            executable: ChatNodeBinary.path,
            serveArguments(path, certificate: live.certificate, key: live.key))
        defer { node.kill() }
        try await onLoopThread {
            let loop = RunLoopKit.RunLoop.current
            let trust = try TLSContext(.client(trust: .caFile(pki.caFile)))
            let connector = TLSFrameLink.connector(host: "127.0.0.1", port: node.port, context: trust)
            func connect(_ user: String) throws -> IMClient {
                let client = IMClient(configuration: clientConfiguration(user), connector: connector)
                client.start()
                let settled = try spin(loop) {
                    if case .closed = client.state { return true }
                    return client.state == .online
                }
                try #require(settled)
                return client
            }
            let early = try connect("early")
            #expect(early.state == .online)

            try install(pki, .wrongName, at: live)
            Glibc.kill(node.process.processIdentifier, SIGHUP)
            var late = try connect("late")
            // The signal is handled on the node's loop: a connection made before that still gets the old one.
            for _ in 0..<50 where late.state == .online {
                late.close()
                usleep(20_000)
                late = try connect("late")
            }
            guard case .closed(.secureConnectionFailed(.certificateRejected(let problem))) = late.state else {
                Issue.record("the new certificate was not served: \(late.state)")
                return
            }
            #expect(problem.kind == .wrongHostName)

            try "not a certificate".write(toFile: live.certificate, atomically: false, encoding: .utf8)
            Glibc.kill(node.process.processIdentifier, SIGHUP)
            usleep(200_000)
            let after = try connect("after")
            guard case .closed(.secureConnectionFailed(.certificateRejected(let kept))) = after.state else {
                Issue.record("the last good certificate was not kept: \(after.state)")
                return
            }
            #expect(kept.kind == .wrongHostName)

            try sendToSelfAndClose(early, loop: loop)
        }
    }

    @Test("a certificate or key that cannot be used stops serve before it listens, naming the file and the cause")
    func badFiles() throws {
        let files = try NodeFiles()
        defer { files.remove() }
        let (pki, path) = (files.pki, files.database)
        try pki.write("garbage.pem", "not a certificate\n")
        let cases: [(certificate: String, key: String, expected: String)] = [
            ("\(pki.directory)/missing.pem", pki.key(.server), "cannot read \(pki.directory)/missing.pem: No such file or directory"),
            ("\(pki.directory)/garbage.pem", pki.key(.server), "no usable certificate in \(pki.directory)/garbage.pem"),
            (pki.certificate(.server), pki.key(.expired), "does not belong to the certificate")
        ]
        for (certificate, key, expected) in cases {
            let (status, output, errors) = try runChatNode(serveArguments(path, certificate: certificate, key: key))
            #expect(status == 1)
            #expect(!output.contains("listening on"), "\(output)")
            #expect(errors.contains(expected), "\(errors)")
        }
    }

    private func serveArguments(_ database: String, _ pki: TestPKI, _ leaf: TestPKI.Leaf) -> [String] {
        serveArguments(database, certificate: pki.certificate(leaf), key: pki.key(leaf))
    }

    private func serveArguments(_ database: String, certificate: String, key: String) -> [String] {
        [
            "serve", "--host", "127.0.0.1", "--port", "0", "--database", database, "--scrypt-cost", "4",
            "--log-level", "error", "--no-http", "--tls-cert", certificate, "--tls-key", key
        ]
    }

    /// Sends a message to the client's own user, expects it stored without a disconnect, and closes.
    private func sendToSelfAndClose(_ client: IMClient, loop: RunLoopKit.RunLoop) throws {
        var stored = 0
        var disconnects = 0
        client.onDelivery = { _, _, state in if case .stored = state { stored += 1 } }
        client.onDisconnect = { _, _ in disconnects += 1 }
        try client.send("over TLS", to: .user(client.configuration.user))
        try #require(try spin(loop) { stored == 1 })
        #expect(disconnects == 0)
        client.close()
        try spin(loop) { client.state == .closed(.userClosed) }
    }

    /// Copies a leaf's certificate and key over the node's files.
    private func install(_ pki: TestPKI, _ leaf: TestPKI.Leaf, at live: (certificate: String, key: String)) throws {
        for (from, to) in [(pki.certificate(leaf), live.certificate), (pki.key(leaf), live.key)] {
            try? FileManager.default.removeItem(atPath: to)
            try FileManager.default.copyItem(atPath: from, toPath: to)
        }
    }

    /// Polls `condition` for up to 10 s (a peer process's output).
    private func waitFor(_ condition: () -> Bool) -> Bool {
        for _ in 0..<1000 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}

/// A test's certificates (a test CA's, ``TestPKI``) and the node's database path, removed together.
private struct NodeFiles {
    let pki: TestPKI
    let database = temporaryDatabase()

    init() throws {
        pki = try TestPKI()
    }

    func remove() {
        pki.remove()
        removeDatabase(database)
    }
}
