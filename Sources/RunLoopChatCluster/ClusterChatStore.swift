public import RunLoopChat
public import RunLoopChatPostgres
public import RunLoopIMCore

/// The store a ``ChatCluster`` shares with the other nodes: a ``ChatStore`` that also reads a stretch
/// of one conversation (to fill a gap the bus left) and the rooms one user is in (which room messages
/// this node's sessions get). Same threading as `ChatStore`: called on the loop's thread, each call
/// completes once there.
public protocol ClusterChatStore: ChatStore {
    /// The messages of `conversation` numbered strictly between `after` and `before`, in
    /// `conversationSeq` order.
    func messages(
        in conversation: IMConversation, after: UInt64, before: UInt64, completion: @escaping (Result<[IMMessage], IMStoreFailure>) -> Void)
    /// The names of the rooms `user` is a member of.
    func rooms(of user: String, completion: @escaping (Result<[String], IMStoreFailure>) -> Void)
}

/// The store nodes share is PostgreSQL's.
extension PostgresChatStore: ClusterChatStore {}
