import ArgumentParser
import ChatNodeKit
import Glibc
import Logging
import RunLoopKit
import RunLoopTLS

/// `serve`'s TLS flags: the certificate and key of both ports (IM, and HTTPS with `wss://`; settings
/// `tls-cert` and `tls-key`, checked and loaded as ``NodeSettings`` says; SIGHUP loads them again,
/// ``NodeReloader``).
struct ServerTLSOptions: ParsableArguments {
    @Option(
        help:
            "PEM certificate chain (the certificate first, then intermediates): the IM port and the web port (HTTPS, wss://) speak TLS only. Needs --tls-key."
    )
    var tlsCert: String?

    @Option(help: "PEM private key of --tls-cert. Reloaded with the certificate on SIGHUP.")
    var tlsKey: String?
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
