import CLibpq
public import RunLoopPostgres

#if canImport(Glibc)
import Glibc
#endif

/// `--postgres` and `CHAT_NODE_POSTGRES`: libpq's connection URI
/// (`postgresql://user[:password]@host[:port]/database?host=/socket/dir&sslmode=…`) or its
/// `key=value` form, read by libpq's own parser so both mean exactly what they mean to `psql`.
public enum PostgresURL {
    /// Where Debian's server puts its socket: libpq's default when the URL names no host.
    public static let defaultSocketDirectory = "/var/run/postgresql"

    /// The configuration `text` describes. Missing parts take libpq's defaults (the socket
    /// directory, port 5432, the user running this process, a database named like the user); a
    /// name in `host` is resolved later, off the loop, by the connection. libpq's `connect_timeout`
    /// becomes the connection's timeout on the loop's clock; other keywords pass through to libpq.
    /// - Throws: libpq's own message for what it cannot parse, or why the result cannot be used.
    public static func parse(_ text: String) throws(StoreURLError) -> PostgresConfiguration {
        var values = try keywords(of: text)
        func take(_ key: String) -> String? {
            defer { values[key] = nil }
            return values[key].flatMap { $0.isEmpty ? nil : $0 }
        }
        let host = take("host") ?? take("hostaddr") ?? defaultSocketDirectory
        // One server per node: libpq's lists of hosts (tried in turn) are not this client's.
        guard !host.contains(",") else { throw StoreURLError(.postgres, "one host only, not a list: \(host)") }
        let portText = take("port") ?? "5432"
        guard let port = UInt16(portText), port > 0 else { throw StoreURLError(.postgres, "invalid port \(portText)") }
        guard let user = take("user") ?? currentUserName() else { throw StoreURLError(.postgres, "no user named and none running this process") }
        var configuration = PostgresConfiguration(host: host, port: port, user: user, password: take("password"), database: take("dbname") ?? user)
        if let seconds = take("connect_timeout") {
            guard let value = Int(seconds), value >= 0 else { throw StoreURLError(.postgres, "invalid connect_timeout \(seconds)") }
            // libpq's 0 means "wait for ever"; its timeout only governs blocking connects, this is the loop's.
            configuration.connectTimeout = value == 0 ? nil : .seconds(value)
        }
        configuration.options = values.filter { !$0.value.isEmpty }
        return configuration
    }

    /// The address of `configuration` as a URL with the password replaced by `***`: what logs show.
    public static func redacted(_ configuration: PostgresConfiguration) -> String {
        let secret = configuration.password == nil ? "" : ":***"
        let isSocket = configuration.host.hasPrefix("/")
        let host = isSocket ? "" : configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        let socket = isSocket ? "?host=\(configuration.host)" : ""
        return "postgresql://\(configuration.user)\(secret)@\(host):\(configuration.port)/\(configuration.database)\(socket)"
    }

    /// Every keyword libpq's parser set, with its value.
    private static func keywords(of text: String) throws(StoreURLError) -> [String: String] {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(text, &message) else {
            defer { if let message { PQfreemem(message) } }
            let reason = message.map { String(cString: $0) } ?? "out of memory"
            throw StoreURLError(.postgres, reason.trimmed(of: "\n "))
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return values
    }

    /// libpq's default user: the name of the effective user.
    private static func currentUserName() -> String? {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }
}

/// Why a `--postgres` or `--redis` address could not be used.
public struct StoreURLError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Which of the two the address was for.
    public enum Kind: String, Sendable {
        case postgres = "PostgreSQL"
        case redis = "Redis"
    }

    /// Which address was refused.
    public var kind: Kind
    /// What is wrong, in the parser's words (libpq's, for PostgreSQL).
    public var reason: String

    public init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { "invalid \(kind.rawValue) address: \(reason)" }
}

extension StringProtocol {
    /// Without the leading and trailing characters in `set`.
    func trimmed(of set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}
