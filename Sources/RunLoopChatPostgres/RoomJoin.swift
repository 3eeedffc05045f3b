/// One room a user is in, as one read of the store saw it: the number of the join that made them a
/// member and the room's membership number at the read (`MembershipCommit`'s numbers). The first
/// tells a JOIN or LEAVE of theirs a cluster's bus brings late from one that came after the read; the
/// second, every change of the room the read holds, so that a node knows which of the room's later
/// changes it must see before it passes the room's messages on.
///
/// A value: it may cross threads.
public struct RoomJoin: Hashable, Sendable {
    /// The number of their join (0 from before the store numbered changes).
    public var joinedSeq: UInt64
    /// The number of the room's last JOIN or LEAVE at the read: at least ``joinedSeq``.
    public var roomSeq: UInt64

    public init(joinedSeq: UInt64, roomSeq: UInt64) {
        self.joinedSeq = joinedSeq
        self.roomSeq = roomSeq
    }
}
