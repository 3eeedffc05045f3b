/// Which rooms the users with a session on this node are in, so a room message from another node
/// goes to its local members and to nobody else. A pure value: the node feeds it and asks it.
///
/// A user's rooms are loaded from the store when their first session here logs in; until then (and
/// after their last session ended) the user is not tracked and gets no room message from the bus —
/// their inbox read brings them. Membership changes (JOIN and LEAVE on any node, from the bus in the
/// room's order) apply to tracked users only; one that comes while a user's load is out is kept and
/// applied over the load's answer, which may predate it.
struct LocalRooms: Sendable {
    /// Room → its members among the tracked users.
    private var members: [String: Set<String>] = [:]
    /// Tracked users → their rooms.
    private var rooms: [String: Set<String>] = [:]
    /// Users whose load is out → the changes seen meanwhile, in order.
    private var loading: [String: [(room: String, joined: Bool)]] = [:]

    /// Whether `user` is tracked or being loaded.
    func isTracking(_ user: String) -> Bool { rooms[user] != nil || loading[user] != nil }

    /// The tracked members of `room`.
    func members(of room: String) -> Set<String> { members[room] ?? [] }

    /// `user`'s first session here logged in: returns whether their rooms must be loaded (not when
    /// they are tracked or loading already).
    mutating func userArrived(_ user: String) -> Bool {
        guard !isTracking(user) else { return false }
        loading[user] = []
        return true
    }

    /// The node may have missed membership changes of its users (``ClusterEvent/catchUp``): returns the
    /// tracked users whose rooms must be loaded again, not already loading. Until each load answers,
    /// its user keeps the rooms known so far.
    mutating func reloadAll() -> [String] {
        let users = rooms.keys.filter { loading[$0] == nil }.sorted()
        for user in users { loading[user] = [] }
        return users
    }
    /// The load of `user`'s rooms answered (ignored when they left meanwhile): they are tracked in
    /// `joined` — and only there, when the load was a reload — with the changes seen since the load
    /// was asked for applied over it.
    mutating func loaded(_ user: String, rooms joined: [String]) {
        guard let changes = loading.removeValue(forKey: user) else { return }
        for room in rooms[user] ?? [] { remove(user, from: room) }
        rooms[user] = []
        for room in joined { add(user, to: room) }
        for change in changes { apply(user, change.room, change.joined) }
    }

    /// The load failed: a first load's user is not tracked (their next first login loads again); a
    /// reloaded user keeps the rooms known before.
    mutating func loadFailed(_ user: String) { loading[user] = nil }

    /// `user` joined or left `room`, on any node.
    mutating func membershipChanged(_ user: String, room: String, joined: Bool) {
        // Kept for the load's answer, which may predate it; a reloaded user's rooms change now too.
        loading[user]?.append((room, joined))
        guard rooms[user] != nil else { return }
        apply(user, room, joined)
    }

    /// `user`'s last session here ended: no longer tracked.
    mutating func userLeft(_ user: String) {
        loading[user] = nil
        for room in rooms.removeValue(forKey: user) ?? [] { remove(user, from: room) }
    }

    private mutating func apply(_ user: String, _ room: String, _ joined: Bool) {
        if joined { add(user, to: room) } else { remove(user, from: room) }
    }

    private mutating func add(_ user: String, to room: String) {
        rooms[user, default: []].insert(room)
        members[room, default: []].insert(user)
    }

    private mutating func remove(_ user: String, from room: String) {
        rooms[user]?.remove(room)
        members[room]?.remove(user)
        if members[room]?.isEmpty == true { members[room] = nil }
    }

}
