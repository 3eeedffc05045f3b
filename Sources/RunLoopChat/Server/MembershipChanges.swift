/// The joins and leaves of one loop pass, per room, netted per member: what that pass's MEMBERSHIP
/// notices say. A member who joined and left again within the pass (or left and came back) ends
/// where they started and is not announced — as a user who drops and logs in again within a pass
/// is not announced offline (docs/PROTOCOL.md §8). A pure value, drained once per pass.
struct MembershipChanges: Sendable {
    private struct Change: Sendable {
        let user: String
        let first: Bool
        var last: Bool
    }

    /// Rooms in the order of their first change, each with its members in the order of theirs.
    private var rooms: [(room: String, changes: [Change])] = []

    var isEmpty: Bool { rooms.isEmpty }

    /// Notes that `user` joined (`joined` true) or left `room`; returns whether it is the first
    /// change since the last ``drain()``, which must then be scheduled for the end of the pass.
    mutating func note(_ user: String, room: String, joined: Bool) -> Bool {
        let first = rooms.isEmpty
        guard let index = rooms.firstIndex(where: { $0.room == room }) else {
            rooms.append((room, [Change(user: user, first: joined, last: joined)]))
            return first
        }
        if let member = rooms[index].changes.firstIndex(where: { $0.user == user }) {
            rooms[index].changes[member].last = joined
        } else {
            rooms[index].changes.append(Change(user: user, first: joined, last: joined))
        }
        return first
    }

    /// The changes that still hold, per room (rooms where none does are left out), and a clean slate.
    mutating func drain() -> [(room: String, changes: [(user: String, joined: Bool)])] {
        defer { rooms = [] }
        return rooms.compactMap { entry in
            let held = entry.changes.filter { $0.first == $0.last }.map { (user: $0.user, joined: $0.last) }
            return held.isEmpty ? nil : (entry.room, held)
        }
    }
}
