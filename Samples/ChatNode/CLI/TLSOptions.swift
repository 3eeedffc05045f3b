import ArgumentParser
import ChatNodeKit
import Glibc
import Logging
import RunLoopKit
import RunLoopTLS

/// `serve`'s TLS flags: the certificate and key of both ports (IM, and HTTPS with `wss://`).
struct ServerTLSOptions: ParsableArguments {
    @Option(
        help:
            "PEM certificate chain (the certificate first, then intermediates): the IM port and the web port (HTTPS, wss://) speak TLS only. Needs --tls-key."
    )
    var tlsCert: String?

    @Option(help: "PEM private key of --tls-cert. Reloaded with the certificate on SIGHUP.")
    var tlsKey: String?

    func validate() throws {
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
    }

    /// Both ports' contexts, loaded from the files now; `nil` without the flags.
    /// - Throws: the file that cannot be used and why (``TLSConfigurationError``).
    func serverContext() throws(TLSConfigurationError) -> ChatNodeTLS? {
        guard let tlsCert, let tlsKey else { return nil }
        return try ChatNodeTLS(certificateChainFile: tlsCert, privateKeyFile: tlsKey)
    }
}

/// `client`'s TLS flags.
struct ClientTLSOptions: ParsableArguments {
    @Flag(help: "Connect with TLS, verifying the node's certificate and its name (--host) against the system's trusted certificates or --ca-file.")
    var tls = false

    @Option(help: "PEM file of the certificates to trust instead of the system's (a private CA). Implies --tls.")
    var caFile: String?

    /// The context every connection attempt uses; `nil` for plaintext.
    /// - Throws: a CA file that cannot be used and why.
    func clientContext() throws(TLSConfigurationError) -> TLSContext? {
        guard tls || caFile != nil else { return nil }
        return try TLSContext(.client(trust: caFile.map(TLSTrustRoots.caFile) ?? .systemStore))
    }
}

extension ServerTLSOptions {
    /// SIGHUP loads the certificate and key again for new connections on both ports; open sessions keep theirs. A
    /// file that fails now leaves the node on the ones it has, and says why.
    func reloadOnHangup(_ node: ChatNode, loop: RunLoop) throws -> RunLoopSignalSource {
        let source = try RunLoopSignalSource(signal: SIGHUP) { _, _ in
            do {
                if let tls = try serverContext() { node.reloadTLS(tls) }
            } catch {
                node.logger.error("TLS reload refused, keeping the certificate in use: \(error)")
            }
        }
        try loop.add(source, forMode: .common)
        // A parent may have started the node with every signal blocked (see unblockStopSignals).
        var hangup = sigset_t()
        sigemptyset(&hangup)
        sigaddset(&hangup, SIGHUP)
        pthread_sigmask(SIG_UNBLOCK, &hangup, nil)
        return source
    }
}
