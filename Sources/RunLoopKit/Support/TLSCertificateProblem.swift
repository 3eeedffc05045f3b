/// Which check of a TLS peer's certificate failed, from OpenSSL's verify result. Here beside
/// `LinkCloseReason` rather than in RunLoopTLS because links of every layer report it: RunLoopTLS's
/// `TLSError` and RunLoopIMCore's `IMLinkFailure` (which stays free of OpenSSL) carry the same value.
public struct TLSCertificateProblem: Sendable, Equatable, CustomStringConvertible {
    /// The checks a person acts on differently.
    public enum Kind: Sendable, Equatable {
        /// The certificate (or one in its chain) has expired.
        case expired
        /// The certificate is not valid yet (a clock behind, or a certificate dated ahead).
        case notYetValid
        /// A self-signed certificate that is not among the trusted ones.
        case selfSigned
        /// Signed by an issuer that is not trusted (or whose certificate is missing from the chain).
        case untrustedIssuer
        /// Valid, but for another host name or address than the one connected to.
        case wrongHostName
        /// Any other verify failure (revoked, wrong purpose, bad signature, …); see ``code``.
        case other
    }

    public var kind: Kind
    /// OpenSSL's verify result (`X509_V_ERR_…`).
    public var code: Int
    /// OpenSSL's text for it (`X509_verify_cert_error_string`), e.g. "certificate has expired".
    public var detail: String

    public init(kind: Kind, code: Int, detail: String) {
        self.kind = kind
        self.code = code
        self.detail = detail
    }

    public var description: String { detail }
}
