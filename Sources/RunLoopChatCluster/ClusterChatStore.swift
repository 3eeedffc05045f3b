public import RunLoopChat
public import RunLoopChatPostgres
public import RunLoopIMCore

/// The store a ``ChatCluster`` shares with the other nodes: a ``ChatStore`` that also reads a stretch
/// of one conversation (to fill a gap the bus left), the rooms one user is in (which room messages
/// this node's sessions get) and whether they are in one room. Same threading as `ChatStore`: called
/// on the loop's thread, each call completes once there.
public protocol ClusterChatStore: ChatStore {
    /// The messages of `conversation` numbered strictly between `after` and `before`, in
    /// `conversationSeq` order.
    func messages(
        in conversation: IMConversation, after: UInt64, before: UInt64, completion: @escaping (Result<[IMMessage], IMStoreFailure>) -> Void)
    /// The rooms `user` is a member of: each room's name → the number of their join in the room's
    /// membership order (0 from before the store numbered changes), what tells a JOIN or LEAVE the bus
    /// brings late from one that came after the read, and the room's number at the read, from which
    /// on the node must see the room's changes before it passes the room's messages to them.
    func rooms(of user: String, completion: @escaping (Result<[String: RoomJoin], IMStoreFailure>) -> Void)
    /// Whether `user` is a member of `room`, with the room's membership number at that read: what
    /// tells a JOIN the bus brings late for a room the user's rooms did not show (they may have left
    /// it before that read) from one that came after it.
    func standing(of user: String, inRoom room: String, completion: @escaping (Result<RoomStanding, IMStoreFailure>) -> Void)
    /// Runs when a new room message committed, before the store's completion, with the room's
    /// membership number at the commit: what the message's bus entry carries.
    var onRoomMessageCommitted: ((_ message: IMMessage, _ membershipSeq: UInt64) -> Void)? { get set }
}

/// The store nodes share is PostgreSQL's.
extension PostgresChatStore: ClusterChatStore {}
