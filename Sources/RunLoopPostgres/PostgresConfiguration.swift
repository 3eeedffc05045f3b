/// Where and how a ``PostgresConnection`` connects.
///
/// `host` is a socket directory (it starts with `/`, e.g. `/var/run/postgresql`), an IP address, or
/// a name. A name is resolved off the loop (by the connection's ``HostResolver``) and libpq gets the
/// addresses as `hostaddr`, so it never resolves on the loop's thread; the name still goes along as
/// `host` (for `.pgpass` and TLS). Settings this type does not name go in ``options`` with libpq's
/// keywords (`sslmode`, `application_name`, …).
public struct PostgresConfiguration: Sendable {
    public var host: String
    public var port: UInt16
    public var user: String
    public var password: String?
    public var database: String
    /// More libpq connection keywords. `gssencmode` is `disable` unless set here: asking for GSSAPI
    /// encryption can make libpq consult Kerberos, which may block.
    public var options: [String: String]
    /// How long resolving and connecting (with authentication) may take, on the loop's clock; `nil`:
    /// no limit. 10 seconds by default.
    public var connectTimeout: Duration?
    /// How long the server may stay silent while results are awaited before the connection closes
    /// with ``PostgresError/timedOut(_:)`` `.query`; `nil` (the default): no limit. It bounds a query
    /// and a dead peer alike: without a cancel request (libpq's is blocking) the only way to stop
    /// waiting is to close.
    public var queryTimeout: Duration?

    public init(
        host: String, port: UInt16 = 5432, user: String, password: String? = nil, database: String,
        options: [String: String] = [:], connectTimeout: Duration? = .seconds(10), queryTimeout: Duration? = nil
    ) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.options = options
        self.connectTimeout = connectTimeout
        self.queryTimeout = queryTimeout
    }

    /// Whether `host` names a socket directory, which needs no resolving.
    var isSocketDirectory: Bool { host.hasPrefix("/") }

    /// libpq's keywords and values for `PQconnectStartParams`; `addresses` are the resolved IPs
    /// (empty for a socket directory or when `host` is an IP itself).
    func keywords(addresses: [String]) -> [(String, String)] {
        var pairs: [(String, String)] = [("port", String(port)), ("user", user), ("dbname", database), ("gssencmode", "disable")]
        if addresses.isEmpty {
            pairs.append((isSocketDirectory ? "host" : "hostaddr", host))
        } else {
            // One host entry per address: libpq pairs the two lists and tries them in order.
            pairs.append(("host", Array(repeating: host, count: addresses.count).joined(separator: ",")))
            pairs.append(("hostaddr", addresses.joined(separator: ",")))
        }
        if let password { pairs.append(("password", password)) }
        for (key, value) in options.sorted(by: { $0.key < $1.key }) {
            pairs.removeAll { $0.0 == key }
            pairs.append((key, value))
        }
        return pairs
    }
}
