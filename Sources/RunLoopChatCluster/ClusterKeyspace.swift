/// The names a cluster of chat nodes gives its keys in the Redis they share: every key starts with one
/// prefix, so a deployment (or a test) can share a Redis with others without meeting their keys, and
/// an operator can find and delete all of them with one pattern.
///
/// A value: it may cross threads.
public struct ClusterKeyspace: Hashable, Sendable {
    /// What every key starts with, `chat:` by default.
    public let prefix: String

    /// - Precondition: `prefix` holds no space, `*`, `?` or `[` (it must stay a literal in a `SCAN
    ///   MATCH` pattern and in log lines).
    public init(prefix: String = "chat:") {
        precondition(!prefix.contains { " *?[".contains($0) }, "a cluster key prefix must be a literal: \(prefix)")
        self.prefix = prefix
    }

    /// The key named by `parts`, after the prefix and joined by `:` (`key("node", "7")` → `chat:node:7`).
    public func key(_ parts: String...) -> String { prefix + parts.joined(separator: ":") }

    /// The `SCAN MATCH` pattern of every key of this keyspace.
    public var everyKeyPattern: String { prefix + "*" }
}
