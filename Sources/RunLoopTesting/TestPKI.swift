import Foundation
import ThrowawayServers

/// Certificates made for one test with the `openssl` command line, in a directory of its own: a test
/// CA, and leaf certificates it signs (or not) for 127.0.0.1 and localhost. Remove it with ``remove()``.
public struct TestPKI: Sendable {
    public let directory: String
    public var caFile: String { "\(directory)/ca.pem" }

    /// The leaves made: the name of each is its file's name.
    public enum Leaf: String, CaseIterable, Sendable {
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

    public init() throws {
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

    public func certificate(_ leaf: Leaf) -> String { "\(directory)/\(leaf.rawValue).pem" }
    public func key(_ leaf: Leaf) -> String { "\(directory)/\(leaf.rawValue).key" }

    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    public func write(_ name: String, _ text: String) throws {
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
        try process.runWithNoSignalBlocked()
        guard try process.waitForExit() == .exited(0) else { throw PeerFailure.toolFailed("openssl \(arguments.joined(separator: " "))") }
    }
}
