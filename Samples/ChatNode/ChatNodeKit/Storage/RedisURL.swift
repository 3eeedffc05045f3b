import RunLoopNet
public import RunLoopRedis

/// `--redis` and `CHAT_NODE_REDIS`: `redis://IP[:port]` (an IPv6 address in brackets) or
/// `unix:///path/to/socket`. No name, as RunLoopRedis connects to addresses only (hiredis would
/// resolve a name with a blocking call); no password or database number: the cluster needs neither.
public enum RedisURL {
    /// The configuration `text` describes.
    /// - Throws: what the address lacks or has too much of.
    public static func parse(_ text: String) throws(StoreURLError) -> RedisConfiguration {
        if text.hasPrefix("unix://") {
            let path = String(text.dropFirst("unix://".count))
            guard path.hasPrefix("/") else { throw StoreURLError(.redis, "a unix socket needs an absolute path: unix:///path") }
            return .unixSocket(path)
        }
        guard text.hasPrefix("redis://") else { throw StoreURLError(.redis, "use redis://IP:PORT or unix:///PATH, not \(text)") }
        var rest = Substring(text.dropFirst("redis://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("@") else { throw StoreURLError(.redis, "passwords are not supported") }
        guard !rest.contains("/") else { throw StoreURLError(.redis, "database numbers are not supported") }
        let (host, portText) = try split(rest)
        var port: UInt16 = 6379
        if let portText {
            guard let number = UInt16(portText), number > 0 else { throw StoreURLError(.redis, "invalid port \(portText)") }
            port = number
        }
        guard SocketAddress(ip: host, port: port) != nil else {
            throw StoreURLError(.redis, "\(host) is not an IP address (names are not resolved)")
        }
        return RedisConfiguration(host: host, port: port)
    }

    /// For logs.
    public static func describe(_ configuration: RedisConfiguration) -> String {
        if configuration.host.hasPrefix("/") { return "unix://\(configuration.host)" }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "redis://\(host):\(configuration.port)"
    }

    /// `host` and `port` of `host[:port]` or `[v6][:port]`.
    private static func split(_ authority: Substring) throws(StoreURLError) -> (String, String?) {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw StoreURLError(.redis, "unclosed [ in \(authority)") }
            let host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw StoreURLError(.redis, "unexpected \(after) after the address") }
            return (host, after.isEmpty ? nil : String(after.dropFirst()))
        }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, !authority.isEmpty else { throw StoreURLError(.redis, "use redis://IP:PORT (IPv6 in brackets)") }
        return (String(parts[0]), parts.count == 2 ? String(parts[1]) : nil)
    }
}
