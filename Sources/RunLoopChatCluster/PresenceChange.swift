/// Users whose sessions across the cluster went from none to some (online) or from some to none
/// (offline), as one script in Redis found them: each transition is reported by the one node whose
/// script made it. When a script's answer was lost (Redis slower than the command timeout, the
/// connection cut), the change it may have made is not lost with it: the node's next script for that
/// user names the user online or offline as it then is — a state, which may repeat one announced
/// before, so announce presence as states, not as toggles.
public struct PresenceChange: Sendable, Equatable {
    /// What made the change.
    public enum Cause: Sendable, Equatable {
        /// Sessions opening or closing on this node.
        case sessions
        /// This node registering its sessions (joining, or coming back after it was fenced or Redis
        /// restarted) under `epoch`.
        case registered(epoch: UInt64)
        /// This node reaped `node`, whose lease under `epoch` had lapsed.
        case reaped(node: String, epoch: UInt64)
        /// This node left the cluster.
        case left
    }

    public let online: [String]
    public let offline: [String]
    public let cause: Cause

    public init(online: [String], offline: [String], cause: Cause) {
        self.online = online
        self.offline = offline
        self.cause = cause
    }
}

/// What a ``NodePresence`` tells its owner.
public enum NodePresenceEvent: Sendable, Equatable {
    /// The node's lease changed state.
    case lease(NodeLeaseState)
    /// Users came online or went offline across the cluster: announce them. A reap reports even
    /// when no user went offline, so the owner learns the node is gone.
    case presence(PresenceChange)
}
