import Foundation
import Glibc
import RunLoopKit
import RunLoopNet
import RunLoopTLS
import RunLoopTesting

/// Certificates made for one test with the `openssl` command line, in a directory of its own: a test
/// CA, and leaf certificates it signs (or not) for 127.0.0.1 and localhost. Remove it with ``remove()``.
struct TestPKI {
    let directory: String
    var caFile: String { "\(directory)/ca.pem" }

    /// The leaves made: the name of each is its file's name.
    enum Leaf: String, CaseIterable {
        /// Signed by the CA, for IP 127.0.0.1 and DNS localhost, valid now.
        case server
        /// Signed by the CA for the same names, expired in 2020.
        case expired
        /// Signed by the CA, valid now, for `wrong.example` only.
        case wrongName
        /// Valid now for the right names, but signed by itself.
        case selfSigned
    }

    private static let ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    private static let rightNames = "subjectAltName=IP:127.0.0.1,DNS:localhost\n"

    init() throws {
        directory = temporaryPath("pki")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        try openssl(["req", "-x509"] + Self.ecKey + ["-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=RunLoopKit test CA", "-days", "2"])
        try write(
            "ca.cnf",
            "[ca]\ndefault_ca = test\n[test]\ndatabase = index.txt\nnew_certs_dir = .\nserial = serial\n"
                + "default_md = sha256\npolicy = anything\nunique_subject = no\n[anything]\ncommonName = supplied\n")
        try write("index.txt", "")
        try write("serial", "1000\n")
        try issue(.server, names: Self.rightNames, dates: ["-days", "2"])
        try issue(.expired, names: Self.rightNames, dates: ["-startdate", "20200101000000Z", "-enddate", "20200201000000Z"])
        try issue(.wrongName, names: "subjectAltName=DNS:wrong.example\n", dates: ["-days", "2"])
        try openssl(
            ["req", "-x509"] + Self.ecKey + [
                "-keyout", "selfSigned.key", "-out", "selfSigned.pem", "-subj", "/CN=localhost", "-days", "2",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"
            ])
    }

    func certificate(_ leaf: Leaf) -> String { "\(directory)/\(leaf.rawValue).pem" }
    func key(_ leaf: Leaf) -> String { "\(directory)/\(leaf.rawValue).key" }

    /// A server context presenting `leaf`.
    func serverContext(
        _ leaf: Leaf = .server, protocols: [String] = [], handshakeTimeout: Duration? = .seconds(10)
    ) throws -> TLSContext {
        var configuration = TLSConfiguration.server(certificateChainFile: certificate(leaf), privateKeyFile: key(leaf))
        configuration.applicationProtocols = protocols
        configuration.handshakeTimeout = handshakeTimeout
        return try TLSContext(configuration)
    }

    /// A client context trusting the test CA only.
    func clientContext(protocols: [String] = []) throws -> TLSContext {
        var configuration = TLSConfiguration.client(trust: .caFile(caFile))
        configuration.applicationProtocols = protocols
        return try TLSContext(configuration)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func write(_ name: String, _ text: String) throws {
        try text.write(toFile: "\(directory)/\(name)", atomically: false, encoding: .utf8)
    }

    private func issue(_ leaf: Leaf, names: String, dates: [String]) throws {
        let name = leaf.rawValue
        try openssl(["req", "-new"] + Self.ecKey + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=localhost"])
        try write("\(name).ext", names)
        try openssl(
            [
                "ca", "-batch", "-notext", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key", "-in", "\(name).csr",
                "-out", "\(name).pem", "-extfile", "\(name).ext"
            ] + dates)
    }

    private func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw PeerFailure.toolFailed("openssl \(arguments.joined(separator: " "))") }
    }
}

enum PeerFailure: Error {
    case toolFailed(String)
    case noPort(String)
}

/// A peer program a test starts (`openssl s_client`/`s_server`, Python): its output (both streams) in
/// a file, its input a pipe the test writes to. Killed when the test lets go of it.
final class PeerProcess: @unchecked Sendable {
    // @unchecked: Foundation's Process and Pipe may be used from any thread; the rest is immutable.
    let process = Process()
    let outputPath = temporaryPath("peer-output")
    private let input = Pipe()

    init(_ executable: String, _ arguments: [String], directory: String) throws {
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = output
        process.standardError = output
        process.standardInput = input
        try process.run()
    }

    /// Everything it printed so far.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    func send(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    var isRunning: Bool { process.isRunning }
    /// Its exit status, once it has ended.
    var exitStatus: Int32 { process.terminationStatus }

    /// The port of `openssl s_server`, from its `ACCEPT host:port` line (polled: it comes within
    /// milliseconds).
    func acceptPort() throws -> UInt16 {
        for _ in 0..<500 {
            let text = output
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
                let port = line.split(separator: ":").last.flatMap({ UInt16($0) })
            {
                return port
            }
            if !process.isRunning { break }
            usleep(10_000)
        }
        throw PeerFailure.noPort(output)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        unlink(outputPath)
    }
}

/// A TCP listener on 127.0.0.1, port 0, whose connections become TLS sessions with ``context`` (read
/// at each accept, so a test can swap it) and echo what they receive.
final class EchoTLSServer {
    let listener = TCPListener()
    var context: TLSContext
    var echoes = true
    var sessions: [TLSConnection] = []
    var opened = 0
    var receivedBytes = 0
    var closes: [TLSCloseReason] = []
    var onOpen: ((TLSConnection) -> Void)?

    init(context: TLSContext) throws {
        self.context = context
        // Weak: the loop's teardown closes what is left after the test let go of the server.
        listener.onAccept = { [weak self] _, tcp in
            guard let self else { return tcp.close(immediately: true) }
            let session = TLSConnection(accepted: tcp, context: self.context)
            session.onConnect = { [weak self] session in
                self?.opened += 1
                self?.onOpen?(session)
            }
            session.onData = { [weak self] session, bytes in
                guard let self else { return }
                self.receivedBytes += bytes.count
                if self.echoes { try? session.write(bytes) }
            }
            session.onClose = { [weak self] _, reason in self?.closes.append(reason) }
            self.sessions.append(session)
        }
        try listener.listen()
    }

    var port: UInt16 { listener.port }
}

/// A client session that collects what arrives and how it ends.
final class CollectingClient {
    let tls: TLSConnection
    var received: [UInt8] = []
    var opened = false
    var closeReason: TLSCloseReason?

    init(context: TLSContext) {
        tls = TLSConnection(context: context)
        tls.onConnect = { [weak self] _ in self?.opened = true }
        tls.onData = { [weak self] _, bytes in self?.received += bytes }
        tls.onClose = { [weak self] _, reason in self?.closeReason = reason }
    }

    func connect(port: UInt16, serverName: String? = nil) {
        tls.connect(to: "127.0.0.1", port: port, serverName: serverName)
    }
}

/// A certificate verify failure's kind, or nil for any other end.
func certificateProblem(_ reason: TLSCloseReason?) -> TLSCertificateProblem.Kind? {
    if case .failed(.certificateRejected(let problem)) = reason { return problem.kind }
    return nil
}
