/// Which rooms the users with a session on this node are in, so a room message from another node
/// goes to its local members and to nobody else. A pure value: the node feeds it and asks it.
///
/// A user's rooms are loaded from the store when their first session here logs in; until then (and
/// after their last session ended) the user is not tracked and gets no room message from the bus —
/// their inbox read brings them. Membership changes (JOIN and LEAVE on any node) apply to tracked
/// users only, in the room's membership order rather than in the order they arrive: changes of one
/// room committed on different nodes reach the bus in any order, so each (room, tracked user) keeps
/// the number of the newest change known (the user's join's number from the load, ``ClusterEvent``'s
/// number from the bus) and a change numbered at or below it is an older one arriving late. One that
/// comes while a user's load is out is kept and applied over the load's answer, which may predate it.
struct LocalRooms: Sendable {
    /// Where a tracked user stands in one room, as of change `seq` of its membership order.
    private struct Standing: Sendable {
        var isMember: Bool
        var seq: UInt64
    }

    /// A JOIN or LEAVE seen while a load was out.
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

    /// Room → its members among the tracked users.
    private var members: [String: Set<String>] = [:]
    /// Tracked users → each room they are known to be in, or to have left (kept so that a join of
    /// theirs arriving late is known for older; as many as they left while tracked), with the newest
    /// change known.
    private var rooms: [String: [String: Standing]] = [:]
    /// Users whose load is out.
    private var loading: [String: Load] = [:]

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
    /// was asked for applied over it, each only if newer than what the load read.
    mutating func loaded(_ user: String, rooms joined: [String: UInt64]) {
        guard let load = loading.removeValue(forKey: user) else { return }
        // Every change known when the load was asked for had committed before it read, so the read
        // holds them or later ones; their numbers still mark older changes arriving late. A room the
        // read no longer shows was left by a change the node missed.
        var standings = load.before.mapValues { Standing(isMember: false, seq: $0.seq) }
        for (room, joinedSeq) in joined { standings[room] = Standing(isMember: true, seq: max(joinedSeq, standings[room]?.seq ?? 0)) }
        for (room, standing) in rooms[user] ?? [:] where standing.isMember { removeMember(user, of: room) }
        rooms[user] = standings
        for (room, standing) in standings where standing.isMember { members[room, default: []].insert(user) }
        for change in load.changes { apply(user, change) }
    }

    /// The load failed: a first load's user is not tracked (their next first login loads again); a
    /// reloaded user keeps the rooms known before.
    mutating func loadFailed(_ user: String) { loading[user] = nil }

    /// `user` joined or left `room`, on any node, as change `seq` of the room's membership order.
    mutating func membershipChanged(_ user: String, room: String, joined: Bool, seq: UInt64) {
        let change = Change(room: room, joined: joined, seq: seq)
        // Kept for the load's answer, which may predate it; a reloaded user's rooms change now too.
        loading[user]?.changes.append(change)
        guard rooms[user] != nil else { return }
        apply(user, change)
    }

    /// `user`'s last session here ended: no longer tracked.
    mutating func userLeft(_ user: String) {
        loading[user] = nil
        for (room, standing) in rooms.removeValue(forKey: user) ?? [:] where standing.isMember { removeMember(user, of: room) }
    }

    private mutating func apply(_ user: String, _ change: Change) {
        if let known = rooms[user]?[change.room], change.seq <= known.seq { return }
        rooms[user]?[change.room] = Standing(isMember: change.joined, seq: change.seq)
        if change.joined { members[change.room, default: []].insert(user) } else { removeMember(user, of: change.room) }
    }

    private mutating func removeMember(_ user: String, of room: String) {
        members[room]?.remove(user)
        if members[room]?.isEmpty == true { members[room] = nil }
    }
}
