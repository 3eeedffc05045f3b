/// The joins and leaves of one loop pass, per room and member, each with its number in the room's
/// membership order (``MembershipCommit/seq``): what that pass's MEMBERSHIP notices say. Changes may
/// be noted out of their order (a cluster's bus brings another node's late); the numbers put them
/// back in it. A pure value, drained once per pass.
struct MembershipChanges: Sendable {
    /// One member's changes of a room within the pass, in their numbers' order (never empty).
    struct History: Sendable {
        let user: String
        private(set) var changes: [(seq: UInt64, joined: Bool)]

        init(user: String, seq: UInt64, joined: Bool) {
            self.user = user
            changes = [(seq, joined)]
        }

        /// The change a notice would announce: the latest.
        var last: (seq: UInt64, joined: Bool) { changes[changes.count - 1] }

        /// Adds a change in its place; one noted twice (the same number) counts once.
        mutating func add(seq: UInt64, joined: Bool) {
            guard !changes.contains(where: { $0.seq == seq }) else { return }
            let place = changes.firstIndex { $0.seq > seq } ?? changes.count
            changes.insert((seq, joined), at: place)
        }

        /// Whether the latest change still holds in the store now, where `now` is the user's membership
        /// (nil: not a member): a join they left again since, or a leave they came back from, is old
        /// news — the later change has its own notice, here or on the node that stored it.
        func holds(now: RoomMember?) -> Bool {
            guard let now else { return !last.joined }
            return last.joined && now.joinedSeq <= last.seq
        }

        /// Whether `member` is owed the notice of the latest change: another member whose own join is
        /// older than it (a later joiner's JOIN_ACK counted it) and who last knew the user otherwise —
        /// as the change of the pass before their join left them (or, joined before the pass, as
        /// before its first change). A member who joins and leaves within the pass is no news to
        /// those who were there all along, but is to one who joined in between.
        func isOwed(to member: RoomMember) -> Bool {
            guard member.name != user, member.joinedSeq < last.seq else { return false }
            let known = changes.last(where: { $0.seq < member.joinedSeq })?.joined ?? !changes[0].joined
            return known != last.joined
        }
    }

    /// Rooms in the order of their first change, each with its members in the order of theirs.
    private var rooms: [(room: String, histories: [History])] = []

    var isEmpty: Bool { rooms.isEmpty }

    /// Notes that `user` joined (`joined` true) or left `room` as its membership change `seq`;
    /// returns whether it is the first change since the last ``drain()``, which must then be
    /// scheduled for the end of the pass.
    mutating func note(_ user: String, room: String, joined: Bool, seq: UInt64) -> Bool {
        let first = rooms.isEmpty
        guard let index = rooms.firstIndex(where: { $0.room == room }) else {
            rooms.append((room, [History(user: user, seq: seq, joined: joined)]))
            return first
        }
        if let member = rooms[index].histories.firstIndex(where: { $0.user == user }) {
            rooms[index].histories[member].add(seq: seq, joined: joined)
        } else {
            rooms[index].histories.append(History(user: user, seq: seq, joined: joined))
        }
        return first
    }

    /// Each room's histories, and a clean slate.
    mutating func drain() -> [(room: String, histories: [History])] {
        defer { rooms = [] }
        return rooms
    }
}
