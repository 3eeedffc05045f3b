/// Why a ``TLSContext`` could not be made from its ``TLSConfiguration``: each case names the file and
/// the cause, so an operator reading it at start (or on a reload) knows what to fix.
public enum TLSConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file cannot be opened: `reason` is the system's (no such file, permission denied).
    case unreadableFile(path: String, reason: String)
    /// The certificate chain file holds no usable certificate: `reason` is OpenSSL's.
    case invalidCertificate(path: String, reason: String)
    /// The private key file holds no usable key: `reason` is OpenSSL's.
    case invalidPrivateKey(path: String, reason: String)
    /// The key is not the certificate's.
    case keyDoesNotMatchCertificate(certificateFile: String, privateKeyFile: String)
    /// The CA file holds no usable certificate: `reason` is OpenSSL's.
    case invalidCAFile(path: String, reason: String)
    /// The system's trust store could not be loaded.
    case systemStoreUnavailable(reason: String)
    /// An ALPN protocol name is empty or longer than 255 bytes.
    case invalidApplicationProtocol(String)
    /// OpenSSL refused to make or set up the context.
    case library(reason: String)

    public var description: String {
        switch self {
        case .unreadableFile(let path, let reason): return "cannot read \(path): \(reason)"
        case .invalidCertificate(let path, let reason): return "no usable certificate in \(path): \(reason)"
        case .invalidPrivateKey(let path, let reason): return "no usable private key in \(path): \(reason)"
        case .keyDoesNotMatchCertificate(let certificate, let key):
            return "the private key in \(key) does not belong to the certificate in \(certificate)"
        case .invalidCAFile(let path, let reason): return "no usable CA certificate in \(path): \(reason)"
        case .systemStoreUnavailable(let reason): return "cannot load the system's trusted certificates: \(reason)"
        case .invalidApplicationProtocol(let name): return "invalid ALPN protocol name \"\(name)\" (1 to 255 bytes)"
        case .library(let reason): return "OpenSSL: \(reason)"
        }
    }
}
