import RunLoopChatCluster
import RunLoopIMSQLite
import RunLoopNet

extension ChatNode {
    /// Whether the node can serve now (``NodeReadiness/decide(storage:redisConnected:isStopping:)``):
    /// its store reachable and, in a cluster, its Redis. Loop thread only.
    public var readiness: NodeReadiness {
        let storage: NodeReadiness.Storage
        switch backend {
        case .sqlite(let store, _): storage = .sqlite(isOpen: store.database.isOpen)
        case .postgres(let database): storage = .postgres(database.link.state)
        }
        return NodeReadiness.decide(storage: storage, redisConnected: cluster.map(\.bus.isPublishing), isStopping: isStopping)
    }
}
