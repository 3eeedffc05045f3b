public import RunLoopNet

/// Whether a node should be sent clients: what `GET /ready` answers (200, or 503 with the reason).
public enum NodeReadiness: Equatable, Sendable {
    case ready
    case notReady(reason: String)

    /// What the node's store is, and how far it is reachable.
    public enum Storage: Equatable, Sendable {
        /// A SQLite file, open or closed.
        case sqlite(isOpen: Bool)
        /// A PostgreSQL database behind a reconnecting link.
        case postgres(ReconnectingLinkState)
    }

    /// The decision, a pure function of what the node knows at this moment.
    /// - Parameters:
    ///   - isStopping: the node is draining: a balancer should stop sending it clients first of all.
    ///   - redisConnected: in a cluster, whether the bus to the other nodes is connected; `nil`
    ///     for a node on its own.
    public static func decide(storage: Storage, redisConnected: Bool?, isStopping: Bool) -> NodeReadiness {
        if isStopping { return .notReady(reason: "the node is stopping") }
        switch storage {
        case .sqlite(isOpen: false):
            return .notReady(reason: "the SQLite database is closed")
        case .postgres(let state) where state != .connected:
            return .notReady(reason: "PostgreSQL is not connected (\(describe(state)))")
        default:
            break
        }
        if redisConnected == false { return .notReady(reason: "the cluster's Redis is not connected") }
        return .ready
    }

    private static func describe(_ state: ReconnectingLinkState) -> String {
        switch state {
        case .idle: return "not started"
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .waiting: return "unreachable, retrying"
        case .gaveUp: return "gave up reconnecting"
        case .closed: return "closed"
        }
    }
}
