public import RunLoopIMCore

/// What one chat node tells the others through the ``ClusterBus``, after its store committed it: the
/// other nodes pass it on to their local sessions. The bus only saves latency: a node that misses an
/// event catches up from the store.
///
/// A value: it may cross threads.
public enum ClusterEvent: Hashable, Sendable {
    /// A stored message (its ``IMMessage/conversationSeq`` set), for the recipients' sessions. A room
    /// message carries the room's membership number at its commit (`membershipSeq`, as
    /// ``membership(user:room:joined:seq:)`` numbers changes): every JOIN and LEAVE of the room
    /// numbered at or below it committed before the message. `nil` for a direct message, a resend,
    /// or from a node from before messages carried it.
    case message(IMMessage, membershipSeq: UInt64? = nil)
    /// `user` joined (`joined` true) or left `room`, as change `seq` of the room's membership order
    /// (RunLoopChat's `MembershipCommit`): the other nodes tell it only to members whose own join is
    /// older, however late the event reaches them.
    case membership(user: String, room: String, joined: Bool, seq: UInt64)
    /// `user` came online (their first session in the cluster) or went offline (their last one ended).
    case presence(user: String, online: Bool)
    /// `user`'s last session was on the publishing node, which stopped gracefully: they are likely to
    /// log in on another node shortly, so the others announce them offline only if they are not back
    /// within their grace (``ChatCluster/Configuration/stopGrace``).
    case awayWithNode(user: String)
    /// The publishing node could not tell the others everything it committed: more events failed to
    /// publish while Redis was out of its reach than it keeps to send again
    /// (``ChatCluster/Configuration/maximumUnpublished``). Every node catches up from the truth: its
    /// sessions read their inboxes again, its users' rooms are loaded again, presence is read again.
    case catchUp

    /// What decides the event's stream: events with one ordering key share a stream and keep their
    /// publishing order. A message and a room's membership change order with their conversation;
    /// presence orders per user.
    var orderingKey: String {
        switch self {
        case .message(let message, _): return message.conversation.storageKey
        case .membership(_, let room, _, _): return IMConversation.room(room).storageKey
        // `u:` is no storage key's prefix, so a user never shares a key with a conversation.
        case .presence(let user, _), .awayWithNode(let user): return "u:" + user
        // It stands for events of any key; it needs no order with any of them.
        case .catchUp: return "c:"
        }
    }
}
