public import RunLoopIMCore

/// The application behind an ``IMServer``: it answers the requests of the layer above sessions and
/// delivery — JOIN, LEAVE, LIST_ROOMS and HISTORY (``IMCommand/isApplicationRequest``) — which the
/// server passes on from logged-in sessions. `RunLoopChat`'s `ChatService` is the chat node's.
///
/// Register one as ``IMServer/applicationHandler``. A server without one does not know these
/// commands: it answers them as any unknown command, ERROR `unknownCommand` with the request's serial,
/// then closes the connection (docs/PROTOCOL.md §3).
///
/// Threads: called on the server's loop thread, one request at a time in the order they arrive; it
/// must not block (the store it reads lives on that thread too) and answers on that thread, at once
/// or once its store has answered.
public protocol IMApplicationHandler {
    /// Answers `request` from the logged-in `user` through `reply`, exactly once, on the loop's
    /// thread (before returning or later): a frame with the answer command and the request's serial,
    /// `code` 0 and a body, or a non-zero `code` and no body. It should not be larger than
    /// ``IMServer/Settings/maximumFrameBody``. A session that ended meanwhile drops the answer.
    /// - Throws: the request's body is not a valid message (then `reply` is never called); the
    ///   session ends with ERROR `badRequest`.
    func answer(_ request: IMFrame, from user: String, on server: IMServer, reply: @escaping (IMFrame) -> Void) throws(IMFrameError)

    /// Answers who is told when `user` comes online or goes offline, and whose presence the snapshot
    /// after `user`'s login holds, exactly once, on the loop's thread (before returning or later).
    /// Asked once per change the server announces and once per login, so it must cost what one
    /// user's contacts cost, never what everyone online costs. Without an answer nobody is told (an
    /// application whose store failed answers `.users([])`: presence is a state, the next change
    /// corrects it). Default: ``IMPresenceAudience/everyone``.
    func presenceAudience(of user: String, on server: IMServer, completion: @escaping (IMPresenceAudience) -> Void)

    /// The audiences of several users whose changes one announcement settles together, in the order
    /// of `users`, through `completion` exactly once, on the loop's thread (before returning or
    /// later): each as ``presenceAudience(of:on:completion:)`` would answer it. A crowd of one room
    /// leaving together is asked this way, so an application can read what its users share once
    /// (the room's members) instead of once per user. Default: each user asked in turn.
    func presenceAudiences(of users: [String], on server: IMServer, completion: @escaping ([IMPresenceAudience]) -> Void)

    /// The large-room size (docs/PROTOCOL.md §8): a room with more members than this carries no
    /// MEMBERSHIP notices and no presence, so a client shows its members' presence as unknown. LOGIN_ACK
    /// announces it in its limits; `nil` (the default): the application has no such rule. Read on the
    /// loop's thread when the server makes the settings of the sessions opened after a change of
    /// ``IMServer/settings`` or ``IMServer/applicationHandler``.
    var largeRoomMembers: Int? { get }
}

/// Who is told of one user's presence: the answer to ``IMApplicationHandler/presenceAudience(of:on:completion:)``.
public enum IMPresenceAudience: Sendable, Equatable {
    /// Every logged-in session of the server — a relay or demo that knows no contacts. The cost of
    /// each change, and of the snapshot at each login, grows with the users online.
    case everyone
    /// The sessions of these users (each named once; the user's own sessions are never told). The
    /// chat application's: those who share a room or a direct conversation with the user.
    case users([String])
}

extension IMApplicationHandler {
    /// ``IMPresenceAudience/everyone``: an application that knows no contacts keeps the server's
    /// announcement to every session.
    public func presenceAudience(of user: String, on server: IMServer, completion: @escaping (IMPresenceAudience) -> Void) {
        completion(.everyone)
    }

    /// ``presenceAudiencesOneByOne(of:on:completion:)``: an application that reads nothing shared
    /// answers each user on its own.
    public func presenceAudiences(of users: [String], on server: IMServer, completion: @escaping ([IMPresenceAudience]) -> Void) {
        presenceAudiencesOneByOne(of: users, on: server, completion: completion)
    }

    /// Each user's ``presenceAudience(of:on:completion:)``, asked in turn (all asked before any
    /// answer is awaited); the answers together, in the order of `users`, once the last has come.
    /// The default of ``presenceAudiences(of:on:completion:)``, for an application that shares reads
    /// only with some stores. Loop thread.
    public func presenceAudiencesOneByOne(of users: [String], on server: IMServer, completion: @escaping ([IMPresenceAudience]) -> Void) {
        var answers = [IMPresenceAudience](repeating: .users([]), count: users.count)
        var waiting = users.count
        guard waiting > 0 else { return completion([]) }
        for (index, user) in users.enumerated() {
            presenceAudience(of: user, on: server) { audience in
                answers[index] = audience
                waiting -= 1
                if waiting == 0 { completion(answers) }
            }
        }
    }

    /// `nil`: an application without large rooms announces none.
    public var largeRoomMembers: Int? { nil }
}
