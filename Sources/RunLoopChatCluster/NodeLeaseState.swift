/// Where a node's lease is, as a ``NodePresence`` reports it.
public enum NodeLeaseState: Sendable, Equatable, CustomStringConvertible {
    /// Started and joining the cluster for the first time: no epoch yet.
    case joining
    /// The node holds its lease under this epoch; its session counts count.
    case held(epoch: UInt64)
    /// The lease was lost (Redis answered that it is gone or another's, or it lapsed while Redis was
    /// out of reach): other nodes may have reaped this node. It is rejoining under a new epoch and
    /// will re-register its sessions.
    case fenced
    /// The node left (or was closed): nothing more happens.
    case left

    public var description: String {
        switch self {
        case .joining: return "joining"
        case .held(let epoch): return "held (epoch \(epoch))"
        case .fenced: return "fenced"
        case .left: return "left"
        }
    }
}
