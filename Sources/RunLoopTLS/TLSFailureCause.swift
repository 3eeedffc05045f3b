import COpenSSL
import RunLoopKit

/// What an OpenSSL failure means to a person, decided from its codes alone: the library reason of the
/// first error queued (`SSL_R_…`) and, for a refused certificate, the verify result (`X509_V_ERR_…`).
/// Pure: the session reads the codes and texts out of OpenSSL and asks here.
enum TLSFailureCause {
    /// The error for a failed `SSL_do_handshake`/`SSL_read`/`SSL_write`.
    /// - Parameters:
    ///   - reason: `ERR_GET_REASON` of the first queued error (0: none queued).
    ///   - reasonText: OpenSSL's text for it.
    ///   - verifyResult: `SSL_get_verify_result` and its text, looked at for a refused certificate.
    ///   - handshaking: whether the handshake was still running.
    static func error(
        reason: Int32, reasonText: String, verifyResult: Int, verifyText: String, handshaking: Bool
    ) -> TLSError {
        switch reason {
        case SSL_R_CERTIFICATE_VERIFY_FAILED:
            return .certificateRejected(problem(verifyResult: verifyResult, detail: verifyText))
        case SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, SSL_R_NO_PROTOCOLS_AVAILABLE,
            SSL_R_VERSION_TOO_LOW, SSL_R_WRONG_SSL_VERSION:
            return .protocolVersion(reasonText)
        case SSL_R_WRONG_VERSION_NUMBER, SSL_R_HTTP_REQUEST, SSL_R_HTTPS_PROXY_REQUEST, SSL_R_PACKET_LENGTH_TOO_LONG,
            SSL_R_UNKNOWN_PROTOCOL, SSL_R_RECORD_LENGTH_MISMATCH:
            // The first bytes are not a TLS record header: a plaintext peer, or the wrong port.
            return handshaking ? .notTLS(reasonText) : .protocolError(reasonText)
        case SSL_AD_REASON_OFFSET..<(SSL_AD_REASON_OFFSET + 256):
            return .alertReceived(reasonText)
        default:
            return handshaking ? .handshakeFailed(reasonText) : .protocolError(reasonText)
        }
    }

    /// The problem a verify result names.
    static func problem(verifyResult: Int, detail: String) -> TLSCertificateProblem {
        let kind: TLSCertificateProblem.Kind
        switch Int32(truncatingIfNeeded: verifyResult) {
        case X509_V_ERR_CERT_HAS_EXPIRED: kind = .expired
        case X509_V_ERR_CERT_NOT_YET_VALID: kind = .notYetValid
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN: kind = .selfSigned
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            kind = .untrustedIssuer
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH: kind = .wrongHostName
        default: kind = .other
        }
        return TLSCertificateProblem(kind: kind, code: verifyResult, detail: detail)
    }
}
