import RunLoopChat
import RunLoopIM
import RunLoopIMCore

/// The server's application handler with one addition: a JOIN or LEAVE the chat's store committed is
/// reported (user, room, joined, the change's number in the room's membership order) once its answer
/// is on its way — what the cluster tells the other nodes. Everything else, and every request of an
/// application that is not the chat (it has no rooms to report), passes through unchanged.
struct MembershipReporter: IMApplicationHandler {
    let inner: any IMApplicationHandler
    let changed: (_ user: String, _ room: String, _ joined: Bool, _ seq: UInt64) -> Void

    func answer(_ request: IMFrame, from user: String, on server: IMServer, reply: @escaping (IMFrame) -> Void) throws(IMFrameError) {
        guard let chat = inner as? ChatService else { return try inner.answer(request, from: user, on: server, reply: reply) }
        try chat.answer(request, from: user, on: server, reply: reply) { [changed] room, joined, commit in
            changed(user, room, joined, commit.seq)
        }
    }

    /// Another node stored a JOIN or LEAVE, numbered `seq` in the room's order: the chat's members
    /// here are told (``ChatService``'s MEMBERSHIP notices); an application that is not the chat has
    /// none to tell.
    func membershipChangedElsewhere(_ user: String, room: String, joined: Bool, seq: UInt64, on server: IMServer) {
        (inner as? ChatService)?.membershipChanged(user, room: room, joined: joined, seq: seq, on: server)
    }

    func presenceAudience(of user: String, on server: IMServer, completion: @escaping (IMPresenceAudience) -> Void) {
        inner.presenceAudience(of: user, on: server, completion: completion)
    }

    func presenceAudiences(of users: [String], on server: IMServer, completion: @escaping ([IMPresenceAudience]) -> Void) {
        inner.presenceAudiences(of: users, on: server, completion: completion)
    }

    var largeRoomMembers: Int? { inner.largeRoomMembers }
}
