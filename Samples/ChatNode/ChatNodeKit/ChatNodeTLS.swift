public import RunLoopTLS

/// A node's TLS identity, one certificate and key for both its ports: the IM port's context, and the
/// web port's, which adds ALPN `http/1.1` (HTTPS and `wss://`; a client that offers only `h2` is
/// refused rather than spoken to in a protocol it did not ask for). Both are made from the files at
/// once, so a reload changes both or neither.
///
/// Threads: immutable; may be made off the loop's thread.
public struct ChatNodeTLS: Sendable {
    /// The IM port's context (no ALPN: the IM protocol has no registered name).
    public let im: TLSContext
    /// The web port's context.
    public let web: TLSContext

    /// Loads the certificate chain and key (PEM) for both ports.
    /// - Throws: the file that cannot be used and why.
    public init(certificateChainFile: String, privateKeyFile: String) throws(TLSConfigurationError) {
        let server = TLSConfiguration.server(certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile)
        im = try TLSContext(server)
        var web = server
        web.applicationProtocols = ["http/1.1"]
        self.web = try TLSContext(web)
    }
}
