/// What a ``TLSContext`` is made from: this side's role (a server's certificate and key, a client's
/// trust roots), the protocol versions, ALPN, and the handshake's time limit. A plain value; loading
/// the files and building OpenSSL's context happen in ``TLSContext/init(_:)``, which names the file
/// and the cause of any failure.
///
/// Fixed for every context: TLS 1.2 and 1.3 only (``minimumVersion`` may raise the floor to 1.3),
/// renegotiation refused, compression off, no session resumption (no cache, no tickets), record
/// buffers released while a connection is idle, and a server choosing the cipher suite by its own
/// order of preference.
public struct TLSConfiguration: Sendable, Equatable {
    /// Which side of the handshake, with what it needs.
    public enum Role: Sendable, Equatable {
        /// A server presenting `certificateChainFile` (PEM: the certificate first, then the
        /// intermediates) with the private key in `privateKeyFile` (PEM). Clients are not asked for
        /// certificates.
        case server(certificateChainFile: String, privateKeyFile: String)
        /// A client verifying the server's certificate chain against `trust`, and its name against
        /// the name given when connecting.
        case client(trust: TLSTrustRoots)
    }

    public var role: Role
    /// The oldest protocol version accepted: ``TLSVersion/v1_2`` by default.
    public var minimumVersion: TLSVersion = .v1_2
    /// Application protocols, most preferred first (`["h2", "http/1.1"]`). A client offers them; a
    /// server picks the first of its own the client offered, and refuses a client that offered only
    /// others (RFC 7301). Empty (the default): no ALPN.
    public var applicationProtocols: [String] = []
    /// How long a handshake may take, from the TCP connection being open to the handshake done; at
    /// expiry the connection is dropped with ``TLSError/handshakeTimedOut``. `nil`: no limit (a stalled
    /// peer then holds its connection for ever — leave one on a server).
    public var handshakeTimeout: Duration? = .seconds(10)

    public init(role: Role) {
        self.role = role
    }

    /// A server's configuration with the certificate chain and key at these paths (PEM).
    public static func server(certificateChainFile: String, privateKeyFile: String) -> TLSConfiguration {
        TLSConfiguration(role: .server(certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile))
    }

    /// A client's configuration trusting `trust` (the system's store by default).
    public static func client(trust: TLSTrustRoots = .systemStore) -> TLSConfiguration {
        TLSConfiguration(role: .client(trust: trust))
    }
}

/// Where a client finds the certificates it trusts.
public enum TLSTrustRoots: Sendable, Equatable {
    /// The system's store (OpenSSL's default paths: Debian's `/etc/ssl/certs`).
    case systemStore
    /// The certificates in this PEM file only (a private CA).
    case caFile(String)
}

/// A TLS protocol version this library speaks.
public enum TLSVersion: Sendable, Equatable, Comparable, CustomStringConvertible {
    case v1_2
    case v1_3

    public var description: String {
        switch self {
        case .v1_2: return "TLS 1.2"
        case .v1_3: return "TLS 1.3"
        }
    }
}
