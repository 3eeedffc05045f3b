/// The answer to a node asking to open one more session of a user (``NodePresence/sessionOpened(_:limit:completion:)``).
public enum SessionAdmission: Sendable, Equatable {
    /// The session may open and counts now. `clusterTotal` is the user's sessions across the cluster
    /// with this one, or `nil` when the node decided without Redis (out of reach, or too slow: only
    /// the node's own sessions were held against the limit).
    case admitted(clusterTotal: Int?)
    /// The user has `clusterTotal` sessions already (across the cluster, or on this node alone when it
    /// decided without Redis), and the limit allows no more.
    case refused(clusterTotal: Int)
}
