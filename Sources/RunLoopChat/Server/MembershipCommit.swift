/// A JOIN or LEAVE as the store committed it: the room after it (what JOIN_ACK and LEAVE_ACK say)
/// and the change's number in the room's membership order.
///
/// Each room numbers its joins and leaves 1, 2, 3, … in commit order (a repeated JOIN too), across
/// every node sharing the store; a member keeps the number of the join that made them one
/// (``RoomMember/joinedSeq``). A MEMBERSHIP notice of change `seq` reaches only members whose own
/// join is older: a later joiner's JOIN_ACK already counted it, however late the notice is made
/// (a cluster's bus, a store read after another commit). Numbers may skip (a refused JOIN); only
/// their order means anything.
///
/// A value: it may cross threads.
public struct MembershipCommit: Hashable, Sendable {
    /// The room after the change.
    public var room: Room
    /// The change's number in the room's membership order.
    public var seq: UInt64

    public init(room: Room, seq: UInt64) {
        self.room = room
        self.seq = seq
    }
}

/// A member of a room as ``ChatStore/members(ofRoom:completion:)`` reads them: who, and since which
/// change (``MembershipCommit/seq``) — what decides which MEMBERSHIP notices they are owed.
///
/// A value: it may cross threads.
public struct RoomMember: Hashable, Sendable {
    public var name: String
    /// The number of the join that made them a member; 0 for a member from before the store
    /// numbered changes (an upgraded database), who is owed every notice.
    public var joinedSeq: UInt64

    public init(name: String, joinedSeq: UInt64) {
        self.name = name
        self.joinedSeq = joinedSeq
    }
}
