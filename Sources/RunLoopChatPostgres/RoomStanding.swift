/// Where one user stands in one room as one read of the store saw it: a member or not, when the
/// room's membership order was at `seq` (`MembershipCommit`'s numbers). What tells a JOIN a cluster's
/// bus brings late from one that came after the read.
///
/// A value: it may cross threads.
public struct RoomStanding: Hashable, Sendable {
    /// Whether the user was a member at the read.
    public var isMember: Bool
    /// The number of the room's last JOIN or LEAVE at the read (0: none yet, or no such room).
    public var seq: UInt64

    public init(isMember: Bool, seq: UInt64) {
        self.isMember = isMember
        self.seq = seq
    }
}
