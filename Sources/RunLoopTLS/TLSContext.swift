import COpenSSL

#if canImport(Glibc)
import Glibc
#endif

/// OpenSSL's context for one ``TLSConfiguration``: the loaded certificate and key (a server) or trust
/// roots (a client), the versions, ALPN and options. Every ``TLSConnection`` made with it keeps it
/// alive for its whole life, so replacing the context an owner uses for new connections — a
/// certificate reloaded on SIGHUP — leaves live sessions on the one they started with.
///
/// Threads: immutable once made, so it may be made on any thread (loading files off the loop's
/// thread) and shared by connections on any loop.
public final class TLSContext: @unchecked Sendable {
    // @unchecked: the SSL_CTX is set up in init and only read after (SSL_new is thread-safe on a
    // context nobody changes), and the ALPN bytes are never written after init.
    public let configuration: TLSConfiguration
    let context: OpaquePointer
    /// The server's ALPN list in wire format and a zero, read by the selection callback (its `arg`).
    private let serverProtocols: UnsafeMutableBufferPointer<UInt8>?

    /// Makes the context, loading the files the configuration names. Any thread.
    /// - Throws: ``TLSConfigurationError``, naming the file and the cause.
    public init(_ configuration: TLSConfiguration) throws(TLSConfigurationError) {
        self.configuration = configuration
        let wireProtocols = try Self.wireFormat(configuration.applicationProtocols)
        OpenSSLErrorQueue.clear()
        let isServer: Bool
        if case .server = configuration.role { isServer = true } else { isServer = false }
        guard let made = SSL_CTX_new(isServer ? TLS_server_method() : TLS_client_method()) else {
            throw .library(reason: OpenSSLErrorQueue.takeFirst().text)
        }
        context = made
        if isServer, !wireProtocols.isEmpty {
            // A zero length ends the list: the callback's only way to know its length.
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: wireProtocols.count + 1)
            _ = buffer.initialize(from: wireProtocols + [0])
            serverProtocols = buffer
        } else {
            serverProtocols = nil
        }
        try setCommonOptions(wireProtocols: wireProtocols)
        switch configuration.role {
        case .server(let chain, let key): try loadIdentity(certificateChainFile: chain, privateKeyFile: key)
        case .client(let trust): try loadTrust(trust)
        }
    }

    deinit {
        SSL_CTX_free(context)
        serverProtocols?.deallocate()
    }

    private func setCommonOptions(wireProtocols: [UInt8]) throws(TLSConfigurationError) {
        let minimum = configuration.minimumVersion == .v1_3 ? TLS1_3_VERSION : TLS1_2_VERSION
        guard rlk_SSL_CTX_set_min_proto_version(context, minimum) == 1 else {
            throw .library(reason: OpenSSLErrorQueue.takeFirst().text)
        }
        var options = rlk_SSL_OP_NO_RENEGOTIATION() | rlk_SSL_OP_NO_COMPRESSION()
        // A server picks the suite from its own order (strongest first), not the first a client lists
        // that it also knows: a client offering a weak suite first cannot talk it down to that one.
        if case .server = configuration.role { options |= rlk_SSL_OP_CIPHER_SERVER_PREFERENCE() }
        SSL_CTX_set_options(context, options)
        // An idle connection then holds no 16 KiB record buffers, which is most of a session's memory.
        _ = rlk_SSL_CTX_set_mode(context, Int(SSL_MODE_RELEASE_BUFFERS))
        // No resumption: our clients keep no sessions, so a server's cache would only hold closed
        // connections' sessions (up to 20,000), and tickets would only be sessions a client holds.
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_SESS_CACHE_MODE, Int(SSL_SESS_CACHE_OFF), nil)
        _ = SSL_CTX_set_num_tickets(context, 0)
        guard !wireProtocols.isEmpty else { return }
        if let serverProtocols {
            SSL_CTX_set_alpn_select_cb(context, Self.selectProtocol, UnsafeMutableRawPointer(serverProtocols.baseAddress))
        } else if SSL_CTX_set_alpn_protos(context, wireProtocols, UInt32(wireProtocols.count)) != 0 {
            throw .library(reason: OpenSSLErrorQueue.takeFirst().text)
        }
    }

    /// The server's pick: the first of its protocols the client offered; a client that offered only
    /// others is refused with no_application_protocol (RFC 7301 §3.2).
    private static let selectProtocol:
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
            UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
        ) -> Int32 = { _, out, outLength, offered, offeredLength, arg in
            guard let arg, let out, let outLength, let offered else { return SSL_TLSEXT_ERR_ALERT_FATAL }
            let server = arg.assumingMemoryBound(to: UInt8.self)
            // The list's length is its own first bytes: length-prefixed names up to a zero-length end.
            var serverLength: UInt32 = 0
            while server[Int(serverLength)] != 0 { serverLength += 1 + UInt32(server[Int(serverLength)]) }
            var chosen: UnsafeMutablePointer<UInt8>?
            let result = SSL_select_next_proto(&chosen, outLength, server, serverLength, offered, offeredLength)
            guard result == OPENSSL_NPN_NEGOTIATED, let chosen else { return SSL_TLSEXT_ERR_ALERT_FATAL }
            out.pointee = UnsafePointer(chosen)
            return SSL_TLSEXT_ERR_OK
        }

    private func loadIdentity(certificateChainFile chain: String, privateKeyFile key: String) throws(TLSConfigurationError) {
        try Self.checkReadable(chain)
        try Self.checkReadable(key)
        guard SSL_CTX_use_certificate_chain_file(context, chain) == 1 else {
            throw .invalidCertificate(path: chain, reason: OpenSSLErrorQueue.takeFirst().text)
        }
        guard SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1 else {
            let reason = OpenSSLErrorQueue.takeFirst()
            if reason.reason == X509_R_KEY_VALUES_MISMATCH {
                throw .keyDoesNotMatchCertificate(certificateFile: chain, privateKeyFile: key)
            }
            throw .invalidPrivateKey(path: key, reason: reason.text)
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            OpenSSLErrorQueue.clear()
            throw .keyDoesNotMatchCertificate(certificateFile: chain, privateKeyFile: key)
        }
    }

    private func loadTrust(_ trust: TLSTrustRoots) throws(TLSConfigurationError) {
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        switch trust {
        case .systemStore:
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                throw .systemStoreUnavailable(reason: OpenSSLErrorQueue.takeFirst().text)
            }
        case .caFile(let path):
            try Self.checkReadable(path)
            guard SSL_CTX_load_verify_locations(context, path, nil) == 1 else {
                throw .invalidCAFile(path: path, reason: OpenSSLErrorQueue.takeFirst().text)
            }
        }
    }

    /// OpenSSL's own message for a missing file is a chain of store errors; the system's says it.
    private static func checkReadable(_ path: String) throws(TLSConfigurationError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .unreadableFile(path: path, reason: String(cString: strerror(errno))) }
        Glibc.close(descriptor)
    }

    /// ALPN's wire format: each name prefixed with its length.
    static func wireFormat(_ protocols: [String]) throws(TLSConfigurationError) -> [UInt8] {
        var bytes: [UInt8] = []
        for name in protocols {
            let utf8 = Array(name.utf8)
            guard (1...255).contains(utf8.count) else { throw .invalidApplicationProtocol(name) }
            bytes.append(UInt8(utf8.count))
            bytes += utf8
        }
        return bytes
    }
}
