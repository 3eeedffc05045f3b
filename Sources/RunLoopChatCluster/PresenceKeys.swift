/// The Redis keys of node leases and session counts, in a cluster's ``ClusterKeyspace``.
///
/// - `<prefix>nodes` — the registry: a hash of node id → the epoch it registered under.
/// - `<prefix>nodes:epoch` — the counter epochs are taken from (`INCR`).
/// - `<prefix>node:<id>:lease` — the node's lease: its epoch, expiring (`PX`) unless refreshed.
/// - `<prefix>node:<id>:sessions` — the node's sessions: a hash of user → count.
/// - `<prefix>sessions` — the cluster's sessions: a hash of user → total over all nodes; a user is
///   online while present.
///
/// A value: it may cross threads.
public struct PresenceKeys: Sendable, Hashable {
    public let keyspace: ClusterKeyspace

    public init(keyspace: ClusterKeyspace = ClusterKeyspace()) { self.keyspace = keyspace }

    /// The registry of live nodes: node id → epoch.
    public var registry: String { keyspace.key("nodes") }
    /// The counter of epochs.
    public var epochCounter: String { keyspace.key("nodes", "epoch") }
    /// The cluster-wide sessions per user.
    public var totals: String { keyspace.key("sessions") }
    /// The lease of node `node`.
    public func lease(_ node: String) -> String { keyspace.key("node", node, "lease") }
    /// The sessions per user of node `node`.
    public func sessions(_ node: String) -> String { keyspace.key("node", node, "sessions") }
}
