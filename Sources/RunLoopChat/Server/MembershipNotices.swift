import RunLoopIM
import RunLoopIMCore
import RunLoopKit

/// The MEMBERSHIP notices of a ``ChatService``: the joins and leaves of a loop pass gathered per
/// server (``MembershipChanges``), then, at the end of the pass, per room one read of its members —
/// the audience and the count at once — and one frame per change, written to the sessions here of
/// the room's other members. A room of 1,000 members costs one read and one frame per member and
/// change, not a read per member; a large room (``ChatService/Settings/largeRoomMembers``), none of
/// its frames. A read that failed tells nobody: a notice is a state, and the member count
/// comes right with the next change or the next room list.
///
/// Threads: confined to the servers' loop threads, where the service is called (hence unchecked).
final class MembershipNotices: @unchecked Sendable {
    /// Each server's changes of the pass not yet announced.
    private var pending: [ObjectIdentifier: MembershipChanges] = [:]
    /// The largest room whose changes are announced, as the last change noted was told.
    private var largeRoomMembers = Int.max

    /// Notes a join (`joined` true) or leave of `room` by `user` stored in `server`'s store (or, in a
    /// cluster, a store it shares); announced at the end of the pass unless the room then has more
    /// than `largeRoomMembers` members. Loop thread only.
    func note(_ user: String, room: String, joined: Bool, largeRoomMembers: Int, on server: IMServer) {
        self.largeRoomMembers = largeRoomMembers
        let key = ObjectIdentifier(server)
        guard pending[key, default: MembershipChanges()].note(user, room: room, joined: joined) else { return }
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

    private func announce(_ rooms: [(room: String, changes: [(user: String, joined: Bool)])], on server: IMServer) {
        guard let store = server.store as? any ChatStore else { return }
        let largeRoomMembers = largeRoomMembers
        for (room, changes) in rooms {
            store.members(ofRoom: room) { [weak server] found in
                // A large room's changes are not announced (a room that grew in this pass, or a
                // change another node stored): a frame to each member per change is what a JOIN
                // must not cost there.
                guard let server, case .success(let members) = found, members.count <= largeRoomMembers else { return }
                let frames = changes.map { change in
                    (change.user, MembershipChange(room: room, user: change.user, joined: change.joined, members: members.count).frame)
                }
                let changed = Set(changes.map(\.user))
                // Members who did not change get every frame; one who joined, the others' only.
                server.notify(frames.map(\.1), toSessionsOf: members.filter { !changed.contains($0) })
                for member in members where changed.contains(member) {
                    server.notify(frames.filter { $0.0 != member }.map(\.1), toSessionsOf: [member])
                }
            }
        }
    }
}

extension MembershipChange {
    /// The notice as a frame: serial 0, like PRESENCE.
    var frame: IMFrame { IMFrame(command: .membership, serial: 0, message: wire) }
}
