/// What a client last heard of each room — its member count and whether the user is in it —, judged
/// against the server's large-room size (docs/PROTOCOL.md §8): in a room whose last known count is
/// over it, the server sends no presence and no MEMBERSHIP, so what a client knows of its members'
/// presence is unknown, not "offline".
///
/// Pure state: ``ChatClient`` feeds it every room it hears of (JOIN_ACK, LEAVE_ACK, LIST_ROOMS,
/// MEMBERSHIP) and the size each LOGIN_ACK announces, and reports the rooms whose verdict changed.
struct LargeRooms {
    /// The size announced at the last login; `nil`: none (no room is large).
    private(set) var size: Int?
    /// The last heard of each room. Every room the server listed: a node's rooms fit in memory.
    private var rooms: [String: Room] = [:]

    /// The last heard of `room`, `nil` if nothing.
    func lastHeard(of room: String) -> Room? { rooms[room] }

    /// Whether `room` is large by its last known count and the size in force.
    func isLarge(_ room: String) -> Bool {
        guard let size, let known = rooms[room] else { return false }
        return known.members > size
    }

    /// Notes what an answer or notice said of a room; whether that changed the room's verdict. A room
    /// heard of for the first time changes it only if it is large: not large is what a client assumes
    /// of any room.
    mutating func note(_ room: Room) -> Bool {
        let wasLarge = isLarge(room.name)
        rooms[room.name] = room
        return isLarge(room.name) != wasLarge
    }

    /// Takes the size a login announced; the rooms whose verdict it changed, by name.
    mutating func setSize(_ newSize: Int?) -> [Room] {
        guard newSize != size else { return [] }
        let before = Set(rooms.keys.filter(isLarge))
        size = newSize
        let after = Set(rooms.keys.filter(isLarge))
        return before.symmetricDifference(after).sorted().compactMap { rooms[$0] }
    }
}
