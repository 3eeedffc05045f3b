import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import SwiftProtobuf

/// The server's application handler with one addition: a JOIN or LEAVE the store accepted is
/// reported (user, room, joined) once its answer is on its way — what the cluster tells the other
/// nodes. Everything else passes through unchanged.
struct MembershipReporter: IMApplicationHandler {
    let inner: any IMApplicationHandler
    let changed: (_ user: String, _ room: String, _ joined: Bool) -> Void

    func answer(_ request: IMFrame, from user: String, on server: IMServer, reply: @escaping (IMFrame) -> Void) throws(IMFrameError) {
        let joined: Bool
        switch request.command {
        case .join: joined = true
        case .leave: joined = false
        default: return try inner.answer(request, from: user, on: server, reply: reply)
        }
        let room = try request.decode(IMRoomRequest.self).room
        try inner.answer(request, from: user, on: server) { [changed] answer in
            reply(answer)
            if answer.code == .ok { changed(user, room, joined) }
        }
    }

    /// Another node stored a JOIN or LEAVE: the chat's members here are told (``ChatService``'s
    /// MEMBERSHIP notices); an application that is not the chat has none to tell.
    func membershipChangedElsewhere(_ user: String, room: String, joined: Bool, on server: IMServer) {
        (inner as? ChatService)?.membershipChanged(user, room: room, joined: joined, on: server)
    }

    func presenceAudience(of user: String, on server: IMServer, completion: @escaping (IMPresenceAudience) -> Void) {
        inner.presenceAudience(of: user, on: server, completion: completion)
    }

    func presenceAudiences(of users: [String], on server: IMServer, completion: @escaping ([IMPresenceAudience]) -> Void) {
        inner.presenceAudiences(of: users, on: server, completion: completion)
    }

    var largeRoomMembers: Int? { inner.largeRoomMembers }
}
