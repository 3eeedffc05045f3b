import RunLoopTLS
import RunLoopTesting
import Testing

/// A context that cannot be made says which file is wrong and why.
@Suite struct ConfigurationTests {
    @Test("a missing certificate file is named with the system's reason")
    func missingCertificate() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let missing = pki.directory + "/nope.pem"
        #expect(throws: TLSConfigurationError.unreadableFile(path: missing, reason: "No such file or directory")) {
            try TLSContext(.server(certificateChainFile: missing, privateKeyFile: pki.key(.server)))
        }
    }

    @Test("a file that holds no certificate is named with OpenSSL's reason")
    func garbageCertificate() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.write("garbage.pem", "not a certificate\n")
        let path = pki.directory + "/garbage.pem"
        #expect(throws: TLSConfigurationError.invalidCertificate(path: path, reason: "no start line")) {
            try TLSContext(.server(certificateChainFile: path, privateKeyFile: pki.key(.server)))
        }
    }

    @Test("a key that is not the certificate's is refused naming both files")
    func mismatchedKey() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let error = TLSConfigurationError.keyDoesNotMatchCertificate(
            certificateFile: pki.certificate(.server), privateKeyFile: pki.key(.expired))
        #expect(throws: error) {
            try TLSContext(.server(certificateChainFile: pki.certificate(.server), privateKeyFile: pki.key(.expired)))
        }
    }

    @Test("a certificate given as the key is not a usable key")
    func certificateAsKey() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        do {
            _ = try TLSContext(.server(certificateChainFile: pki.certificate(.server), privateKeyFile: pki.certificate(.server)))
            Issue.record("a certificate was taken for a key")
        } catch {
            if case .invalidPrivateKey(let path, _) = error {
                #expect(path == pki.certificate(.server))
            } else {
                Issue.record("got \(error)")
            }
        }
    }

    @Test("a CA file without certificates, and a missing one")
    func badCAFiles() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.write("empty.pem", "")
        let empty = pki.directory + "/empty.pem"
        #expect(throws: TLSConfigurationError.self) { try TLSContext(.client(trust: .caFile(empty))) }
        do {
            _ = try TLSContext(.client(trust: .caFile(empty)))
        } catch {
            if case .invalidCAFile(let path, _) = error {
                #expect(path == empty)
            } else {
                Issue.record("got \(error)")
            }
        }
        let missing = pki.directory + "/none.pem"
        #expect(throws: TLSConfigurationError.unreadableFile(path: missing, reason: "No such file or directory")) {
            try TLSContext(.client(trust: .caFile(missing)))
        }
    }

    @Test("the system store loads; ALPN names must be 1 to 255 bytes")
    func systemStoreAndALPNNames() throws {
        _ = try TLSContext(.client())
        var configuration = TLSConfiguration.client()
        configuration.applicationProtocols = ["h2", ""]
        #expect(throws: TLSConfigurationError.invalidApplicationProtocol("")) { try TLSContext(configuration) }
        configuration.applicationProtocols = [String(repeating: "x", count: 256)]
        #expect(throws: TLSConfigurationError.invalidApplicationProtocol(String(repeating: "x", count: 256))) {
            try TLSContext(configuration)
        }
    }
}
