/// Which rooms the users with a session on this node are in, so a room message from another node
/// goes to its local members and to nobody else. A pure value: the node feeds it and asks it.
///
/// A user's rooms are loaded from the store when their first session here logs in; until then (and
/// after their last session ended) the user is not tracked and gets no room message from the bus —
/// their inbox read brings them. Membership changes (JOIN and LEAVE on any node) apply to tracked
/// users only, in the room's membership order rather than in the order they arrive: changes of one
/// room committed on different nodes reach the bus in any order, so each (room, tracked user) keeps
/// the number of the newest change known (the user's join's number from the load, ``ClusterEvent``'s
/// number from the bus, the room's number from a check) and a change numbered at or below it is an
/// older one arriving late. One that comes while a user's load is out is kept and applied over the
/// load's answer, which may predate it.
///
/// A number is only as good as the read behind it. A load shows the rooms a user is in, not those
/// they left, so for any other room the node does not know how far the store's membership order had
/// gone when it read: a JOIN arriving then may be older than a LEAVE that committed before the read
/// (its entry came while the user was not tracked, or was dropped by a node that had to catch up).
/// Such a JOIN is not applied but checked: the store is asked whether the user is in the room and
/// what the room's number is (``RoomCheck``), and the answer, with every change of theirs in the room
/// seen while it was out, decides. A LEAVE needs no read behind it: it only ever takes a user out.
struct LocalRooms: Sendable {
    /// Where a tracked user stands in one room, as of change `seq` of its membership order.
    private struct Standing: Sendable {
        var isMember: Bool
        var seq: UInt64
        /// Whether a read of the store stands behind `seq` (the user's load showed the room, or a
        /// check answered): every change of theirs numbered above it is one the node sees after the
        /// read, so the newest wins. Without one, only a LEAVE applies; a JOIN is checked.
        var isRead: Bool
    }

    /// A JOIN or LEAVE seen while a load or a check was out.
    private struct Change: Sendable {
        var room: String
        var joined: Bool
        var seq: UInt64
    }

    /// A load that is out: what was known when it was asked for, and the changes seen since.
    private struct Load: Sendable {
        var before: [String: Standing]
        var changes: [Change] = []
    }

    /// A check that is wanted: whether it is out now (false once it failed), and the user's changes
    /// of the room seen since it was asked for, applied over its answer.
    private struct Check: Sendable {
        var isAsked = true
        var changes: [Change] = []
    }

    /// Room → its members among the tracked users.
    private var members: [String: Set<String>] = [:]
    /// Tracked users → each room they are known to be in, or to have left (kept so that a join of
    /// theirs arriving late is known for older; as many as they left while tracked), with the newest
    /// change known.
    private var rooms: [String: [String: Standing]] = [:]
    /// Users whose load is out.
    private var loading: [String: Load] = [:]
    /// Checks wanted, by user and room.
    private var checks: [String: [String: Check]] = [:]

    /// Whether `user` is tracked or being loaded.
    func isTracking(_ user: String) -> Bool { rooms[user] != nil || loading[user] != nil }

    /// The tracked members of `room`.
    func members(of room: String) -> Set<String> { members[room] ?? [] }

    /// `user`'s first session here logged in: returns whether their rooms must be loaded (not when
    /// they are tracked or loading already).
    mutating func userArrived(_ user: String) -> Bool {
        guard !isTracking(user) else { return false }
        loading[user] = Load(before: [:])
        return true
    }

    /// The node may have missed membership changes of its users (``ClusterEvent/catchUp``): returns the
    /// tracked users whose rooms must be loaded again, not already loading. Until each load answers,
    /// its user keeps the rooms known so far.
    mutating func reloadAll() -> [String] {
        let users = rooms.keys.filter { loading[$0] == nil }.sorted()
        for user in users { loading[user] = Load(before: rooms[user] ?? [:]) }
        return users
    }

    /// The load of `user`'s rooms answered (ignored when they left meanwhile): they are tracked in
    /// `joined` — and only there, when the load was a reload — with the changes seen since the load
    /// was asked for applied over it, each only if newer than what the load read. Returns the checks
    /// to ask for: JOINs seen meanwhile of rooms the read does not show.
    mutating func loaded(_ user: String, rooms joined: [String: UInt64]) -> [RoomCheck] {
        guard let load = loading.removeValue(forKey: user) else { return [] }
        // Every change known when the load was asked for had committed before it read, so the read
        // holds them or later ones; their numbers still mark older changes arriving late. A room the
        // read no longer shows was left by a change the node missed, at a number it does not know.
        var standings = load.before.mapValues { Standing(isMember: false, seq: $0.seq, isRead: false) }
        for (room, joinedSeq) in joined {
            standings[room] = Standing(isMember: true, seq: max(joinedSeq, standings[room]?.seq ?? 0), isRead: true)
        }
        for (room, standing) in rooms[user] ?? [:] where standing.isMember { removeMember(user, of: room) }
        rooms[user] = standings
        for (room, standing) in standings where standing.isMember { members[room, default: []].insert(user) }
        return load.changes.compactMap { apply(user, $0) }
    }

    /// The load failed: a first load's user is not tracked (their next first login loads again); a
    /// reloaded user keeps the rooms known before.
    mutating func loadFailed(_ user: String) { loading[user] = nil }

    /// `user` joined or left `room`, on any node, as change `seq` of the room's membership order.
    /// Returns the check to ask for when the JOIN can only be applied once the store answered one.
    mutating func membershipChanged(_ user: String, room: String, joined: Bool, seq: UInt64) -> RoomCheck? {
        let change = Change(room: room, joined: joined, seq: seq)
        // Kept for the load's answer, which may predate it; a reloaded user's rooms change now too.
        loading[user]?.changes.append(change)
        return apply(user, change)
    }

    /// `check` answered: the store read `user` in the room (`isMember`) or not, when its membership
    /// order was at `seq`. That read, and the changes seen since it was asked for over it, decide.
    /// Returns whether the user is in the room now (ignored, false, when no such check is wanted:
    /// the user left meanwhile).
    mutating func checked(_ check: RoomCheck, isMember: Bool, seq: UInt64) -> Bool {
        guard let wanted = checks[check.user]?.removeValue(forKey: check.room) else { return false }
        if checks[check.user]?.isEmpty == true { checks[check.user] = nil }
        let known = rooms[check.user]?[check.room]
        // A reload that answered meanwhile may have read later.
        if known?.isRead != true || (known?.seq ?? 0) < seq { set(check.user, check.room, Standing(isMember: isMember, seq: seq, isRead: true)) }
        for change in wanted.changes { _ = apply(check.user, change) }
        return rooms[check.user]?[check.room]?.isMember == true
    }

    /// `check` could not be answered: it stays wanted, to be asked again (``checksToAsk()``).
    mutating func checkFailed(_ check: RoomCheck) { checks[check.user]?[check.room]?.isAsked = false }

    /// The checks wanted and not out (they failed), now out again, in order.
    mutating func checksToAsk() -> [RoomCheck] {
        var asked: [RoomCheck] = []
        for (user, rooms) in checks {
            for (room, check) in rooms where !check.isAsked {
                checks[user]?[room]?.isAsked = true
                asked.append(RoomCheck(user: user, room: room))
            }
        }
        return asked.sorted { ($0.user, $0.room) < ($1.user, $1.room) }
    }

    /// The tracked members of `room` whose standing there is not being checked: those a room message
    /// may go to. One being checked may have left by a change the node has not seen; the check's
    /// answer has them read their inbox.
    func settledMembers(of room: String) -> [String] {
        members(of: room).filter { checks[$0]?[room] == nil }.sorted()
    }

    /// A change of `room` the node waited for did not come (``RoomMessageGate``): it may be one of any
    /// tracked user who stands there, so each of them is checked (not those being checked already).
    mutating func recheck(_ room: String) -> [RoomCheck] {
        var asked: [RoomCheck] = []
        for (user, standings) in rooms where standings[room] != nil && checks[user]?[room] == nil {
            checks[user, default: [:]][room] = Check()
            asked.append(RoomCheck(user: user, room: room))
        }
        return asked.sorted { $0.user < $1.user }
    }

    /// `user`'s last session here ended: no longer tracked.
    mutating func userLeft(_ user: String) {
        loading[user] = nil
        checks[user] = nil
        for (room, standing) in rooms.removeValue(forKey: user) ?? [:] where standing.isMember { removeMember(user, of: room) }
    }

    /// Applies `change` to a tracked user, unless it is older than what is known; returns the check to
    /// ask for when it is a JOIN without a read behind what is known.
    private mutating func apply(_ user: String, _ change: Change) -> RoomCheck? {
        guard let standings = rooms[user] else { return nil }
        // Over a check's answer too: it may have read before this change committed.
        checks[user]?[change.room]?.changes.append(change)
        let known = standings[change.room]
        if let known, change.seq <= known.seq { return nil }
        guard !change.joined || known?.isRead == true else {
            // Asked after this JOIN committed, the check's read holds it or what came later.
            guard checks[user]?[change.room] == nil else { return nil }
            checks[user, default: [:]][change.room] = Check()
            return RoomCheck(user: user, room: change.room)
        }
        set(user, change.room, Standing(isMember: change.joined, seq: change.seq, isRead: known?.isRead ?? false))
        return nil
    }

    private mutating func set(_ user: String, _ room: String, _ standing: Standing) {
        rooms[user]?[room] = standing
        if standing.isMember { members[room, default: []].insert(user) } else { removeMember(user, of: room) }
    }

    private mutating func removeMember(_ user: String, of room: String) {
        members[room]?.remove(user)
        if members[room]?.isEmpty == true { members[room] = nil }
    }
}

/// Whether a tracked user is in a room, to be read from the store before a JOIN of theirs is applied
/// (``LocalRooms``).
struct RoomCheck: Hashable, Sendable {
    var user: String
    var room: String
}
