import RunLoopIM
import RunLoopIMCore
import RunLoopKit

/// The MEMBERSHIP notices of a ``ChatService``: the joins and leaves of a loop pass gathered per
/// server (``MembershipChanges``), then, at the end of the pass, per room one read of its members —
/// the audience, each member's join's number and the count at once — and one frame per change,
/// written to the sessions here of the members it is news to. A change reaches only members whose
/// own join is older than it (``MembershipCommit``): the read may come after later joins were
/// committed (another node's change told late by the bus, or a JOIN committed but not yet
/// answered here), and those joiners' JOIN_ACK counted it already. A room of 1,000 members costs one
/// read and one frame per member and change, not a read per member; a large room
/// (``ChatService/Settings/largeRoomMembers``), none of its frames. A read that failed tells nobody:
/// a notice is a state, and the member count comes right with the next change or the next room list.
///
/// Threads: confined to the servers' loop threads, where the service is called (hence unchecked).
final class MembershipNotices: @unchecked Sendable {
    /// Each server's changes of the pass not yet announced.
    private var pending: [ObjectIdentifier: MembershipChanges] = [:]
    /// The largest room whose changes are announced, as the last change noted was told.
    private var largeRoomMembers = Int.max

    /// Notes a join (`joined` true) or leave of `room` by `user`, change `seq` of the room, stored in
    /// `server`'s store (or, in a cluster, a store it shares); announced at the end of the pass unless
    /// the room then has more than `largeRoomMembers` members. Loop thread only.
    func note(_ user: String, room: String, joined: Bool, seq: UInt64, largeRoomMembers: Int, on server: IMServer) {
        self.largeRoomMembers = largeRoomMembers
        let key = ObjectIdentifier(server)
        guard pending[key, default: MembershipChanges()].note(user, room: room, joined: joined, seq: seq) else { return }
        do {
            try server.loop.performFromLoopThread(inModes: server.modes, label: "chat membership notices") { [weak self, weak server] in
                guard let self else { return }
                guard let server, var changes = self.pending.removeValue(forKey: key) else {
                    self.pending[key] = nil
                    return
                }
                self.announce(changes.drain(), on: server)
            }
        } catch {
            pending[key] = nil
        }
    }

    private func announce(_ rooms: [(room: String, histories: [MembershipChanges.History])], on server: IMServer) {
        guard let store = server.store as? any ChatStore else { return }
        let largeRoomMembers = largeRoomMembers
        for (room, histories) in rooms {
            store.members(ofRoom: room) { [weak server] found in
                // A large room's changes are not announced (a room that grew in this pass, or a
                // change another node stored): a frame to each member per change is what a JOIN
                // must not cost there.
                guard let server, case .success(let members) = found, members.count <= largeRoomMembers else { return }
                Self.notify(members, of: histories, in: room, on: server)
            }
        }
    }

    /// Writes each change that still holds, in the room's order, to the members it is news to: those
    /// owed the same changes share one `notify` (most members: all of them).
    private static func notify(_ members: [RoomMember], of histories: [MembershipChanges.History], in room: String, on server: IMServer) {
        let now = Dictionary(members.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let told = histories.filter { $0.holds(now: now[$0.user]) }.sorted { $0.last.seq < $1.last.seq }
        guard !told.isEmpty else { return }
        let frames = told.map { MembershipChange(room: room, user: $0.user, joined: $0.last.joined, members: members.count).frame }
        // The usual pass, one change: its audience without a list of changes per member.
        if told.count == 1 { return server.notify(frames, toSessionsOf: members.lazy.filter { told[0].isOwed(to: $0) }.map(\.name)) }
        var audiences: [[Int]: [String]] = [:]
        var order: [[Int]] = []
        for member in members {
            let owed = told.indices.filter { told[$0].isOwed(to: member) }
            guard !owed.isEmpty else { continue }
            if audiences[owed] == nil { order.append(owed) }
            audiences[owed, default: []].append(member.name)
        }
        for owed in order { server.notify(owed.map { frames[$0] }, toSessionsOf: audiences[owed] ?? []) }
    }
}

extension MembershipChange {
    /// The notice as a frame: serial 0, like PRESENCE.
    var frame: IMFrame { IMFrame(command: .membership, serial: 0, message: wire) }
}
