import COpenSSL

#if canImport(Glibc)
import Glibc
#endif

/// One OpenSSL session on two memory BIOs: bytes from the network go into the read BIO, records to
/// send come out of the write BIO. Nothing here touches a socket or waits: "wants read" only means
/// the next bytes from the loop are needed. Loop thread only, like its connection.
final class TLSEngine {
    /// What one pass of reading came to.
    enum ReadOutcome: Equatable {
        /// Everything readable was read; more needs more input.
        case needsMoreInput
        /// The owner paused: what is left stays in OpenSSL for later.
        case paused
        /// The peer's close_notify.
        case closeNotify
        case failed(TLSError)
    }

    private let ssl: OpaquePointer
    /// Bytes each BIO took since it was last made: a memory BIO keeps the buffer of its largest
    /// burst for ever, so one that took more than ``bufferReleaseThreshold`` is replaced once empty.
    private var fedSinceFresh = 0
    private var takenSinceFresh = 0
    private static let bufferReleaseThreshold = 1024
    /// Keeps the context alive as long as the session (OpenSSL counts its own reference too).
    let context: TLSContext
    private var shutdownSent = false

    /// - Parameter serverName: a client's name for the server: SNI and host name verification for a
    ///   name, address verification for an IP literal (which RFC 6066 keeps out of SNI).
    init(context: TLSContext, serverName: String?) throws(TLSError) {
        self.context = context
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(context.context), let readBIO = BIO_new(BIO_s_mem()), let writeBIO = BIO_new(BIO_s_mem()) else {
            throw .handshakeFailed(OpenSSLErrorQueue.takeFirst().text)
        }
        self.ssl = ssl
        SSL_set_bio(ssl, readBIO, writeBIO)
        guard case .client = context.configuration.role else {
            SSL_set_accept_state(ssl)
            return
        }
        SSL_set_connect_state(ssl)
        guard let serverName, !serverName.isEmpty else { return }
        let named: Int32
        if Self.isIPLiteral(serverName) {
            named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName)
        } else {
            named = rlk_SSL_set_tlsext_host_name(ssl, serverName) == 1 ? SSL_set1_host(ssl, serverName) : 0
        }
        guard named == 1 else { throw .handshakeFailed("cannot verify the name \(serverName): \(OpenSSLErrorQueue.takeFirst().text)") }
    }

    deinit {
        SSL_free(ssl)
    }

    private static func isIPLiteral(_ name: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET, name, &address) == 1 || inet_pton(AF_INET6, name, &address) == 1
    }

    /// Hands OpenSSL bytes that arrived (a memory BIO takes them all).
    func feed(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        _ = bytes.withUnsafeBytes { BIO_write(SSL_get_rbio(ssl), $0.baseAddress, Int32($0.count)) }
        fedSinceFresh += bytes.count
    }

    /// Takes the records OpenSSL has for the peer.
    func takeOutput() -> [UInt8] {
        let writeBIO = SSL_get_wbio(ssl)
        let pending = Int(BIO_ctrl_pending(writeBIO))
        guard pending > 0 else { return [] }
        let output = [UInt8](unsafeUninitializedCapacity: pending) { buffer, count in
            count = Int(max(0, BIO_read(writeBIO, buffer.baseAddress, Int32(pending))))
        }
        takenSinceFresh += output.count
        if takenSinceFresh > Self.bufferReleaseThreshold, BIO_ctrl_pending(writeBIO) == 0, let fresh = BIO_new(BIO_s_mem()) {
            SSL_set0_wbio(ssl, fresh)
            takenSinceFresh = 0
        }
        return output
    }

    /// Whether a BIO may hold a buffer grown past ``bufferReleaseThreshold``: never once a session is
    /// idle.
    var mayHoldLargeBuffers: Bool { max(fedSinceFresh, takenSinceFresh) > Self.bufferReleaseThreshold }

    /// Replaces the read BIO once OpenSSL has consumed a large burst from it (see ``fedSinceFresh``).
    private func releaseReadBuffer() {
        guard fedSinceFresh > Self.bufferReleaseThreshold, BIO_ctrl_pending(SSL_get_rbio(ssl)) == 0,
            let fresh = BIO_new(BIO_s_mem())
        else { return }
        SSL_set0_rbio(ssl, fresh)
        fedSinceFresh = 0
    }

    func handshake() -> TLSSessionMachine.HandshakeStep {
        OpenSSLErrorQueue.clear()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            releaseReadBuffer()
            return .finished
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .needsMoreInput
        default: return .failed(failure(handshaking: true))
        }
    }

    /// Reads plaintext into `deliver` while it has any and `shouldContinue` says so.
    func read(shouldContinue: () -> Bool, deliver: ([UInt8]) -> Void) -> ReadOutcome {
        let chunk = 16 * 1024
        while true {
            guard shouldContinue() else { return .paused }
            OpenSSLErrorQueue.clear()
            var result: Int32 = 0
            let bytes = [UInt8](unsafeUninitializedCapacity: chunk) { buffer, count in
                result = SSL_read(ssl, buffer.baseAddress, Int32(chunk))
                count = Int(max(0, result))
            }
            if result > 0 {
                deliver(bytes)
                continue
            }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                releaseReadBuffer()
                return .needsMoreInput
            case SSL_ERROR_ZERO_RETURN: return .closeNotify
            default: return .failed(failure(handshaking: false))
            }
        }
    }

    /// Encrypts `bytes` into records (a memory BIO never refuses them, so all of them at once).
    func write(_ bytes: [UInt8]) throws(TLSError) {
        OpenSSLErrorQueue.clear()
        let result = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        guard result > 0 else { throw failure(handshaking: false) }
    }

    /// Queues close_notify, once.
    func shutdown() {
        guard !shutdownSent else { return }
        shutdownSent = true
        OpenSSLErrorQueue.clear()
        _ = SSL_shutdown(ssl)
        OpenSSLErrorQueue.clear()
    }

    /// The protocol ALPN settled on, if any.
    var applicationProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Whether the peer left this side a session it could resume (a ticket, a cached session).
    var hasResumableSession: Bool {
        guard let session = SSL_get_session(ssl) else { return false }
        return SSL_SESSION_is_resumable(session) == 1
    }

    /// The version the handshake settled on.
    var version: TLSVersion? {
        switch SSL_version(ssl) {
        case TLS1_3_VERSION: return .v1_3
        case TLS1_2_VERSION: return .v1_2
        default: return nil
        }
    }

    private func failure(handshaking: Bool) -> TLSError {
        let first = OpenSSLErrorQueue.takeFirst()
        let verifyResult = SSL_get_verify_result(ssl)
        let verifyText = X509_verify_cert_error_string(verifyResult).map { String(cString: $0) } ?? "error \(verifyResult)"
        return TLSFailureCause.error(
            reason: first.reason, reasonText: first.text, verifyResult: verifyResult, verifyText: verifyText,
            handshaking: handshaking)
    }
}
