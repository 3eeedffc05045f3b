public import RunLoopIM
public import RunLoopIMCore
import SwiftProtobuf

/// The chat application on an ``IMServer``: rooms (JOIN, LEAVE, LIST_ROOMS) and conversation history
/// (HISTORY) over the server's store, which must be a ``ChatStore``, each answer made to fit the
/// server's frame limit.
/// The server keeps sessions, delivery and presence; this answers what docs/PROTOCOL.md §8 describes,
/// and who sees whose presence (``presenceAudience(of:on:completion:)``).
///
/// ```swift
/// let server = IMServer(store: InMemoryIMStore())
/// server.applicationHandler = ChatService()
/// try server.listen()
/// ```
///
/// It also tells a room's members online when someone joins or leaves it (MEMBERSHIP notices, once per
/// loop pass, docs/PROTOCOL.md §8) — unless the room is large (``Settings/largeRoomMembers``).
///
/// Threads: the server calls it on its loop's thread; its only state is the notices of the pass.
public struct ChatService: IMApplicationHandler, Sendable {
    /// How long pages are. A page is also cut to fit the server's frame limit.
    public struct Settings: Sendable, Equatable {
        /// Messages in a HISTORY page when the client asks for 0, and the most it may ask for.
        public var historyPageSize = 50
        public var maximumHistoryPageSize = 500
        /// Rooms in a ROOM_LIST page when the client asks for 0, and the most it may ask for.
        public var roomListPageSize = 100
        public var maximumRoomListPageSize = 500
        /// A room with more members than this is large (docs/PROTOCOL.md §8): its members are not
        /// each other's contacts through it, and its joins and leaves send no MEMBERSHIP notices, so
        /// a JOIN costs the same in a room of 10,000 as in one of 10 — not a notice and a presence
        /// frame to every member, and a snapshot of all of them to the newcomer.
        public var largeRoomMembers = 1_000

        public init() {}
    }

    public var settings: Settings
    private let notices = MembershipNotices()

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// Answers JOIN, LEAVE, LIST_ROOMS or HISTORY (``IMApplicationHandler``) once the store has: the
    /// server passes nothing else (``IMCommand/isApplicationRequest``). With a server whose store is
    /// not a ``ChatStore`` — a wiring mistake, not the client's — every answer is `internalError`.
    public func answer(_ request: IMFrame, from user: String, on server: IMServer, reply: @escaping (IMFrame) -> Void) throws(IMFrameError) {
        try answer(request, from: user, on: server, reply: reply, committed: nil)
    }

    /// ``answer(_:from:on:reply:)``, and each JOIN or LEAVE the store committed handed to `committed`
    /// (the room, whether joined, the commit) right after its answer went to `reply`: what a cluster
    /// tells the other nodes, numbered. Loop thread only.
    package func answer(
        _ request: IMFrame, from user: String, on server: IMServer, reply: @escaping (IMFrame) -> Void,
        committed: ((_ room: String, _ joined: Bool, _ commit: MembershipCommit) -> Void)?
    ) throws(IMFrameError) {
        let answerCommand: IMCommand
        switch request.command {
        case .join: answerCommand = .joinAck
        case .leave: answerCommand = .leaveAck
        case .listRooms: answerCommand = .roomList
        case .history: answerCommand = .historyPage
        default: preconditionFailure("IMServer passes application requests only, not \(request.header.command)")
        }
        guard let store = server.store as? any ChatStore else {
            return reply(IMFrame(command: answerCommand, serial: request.serial, code: .internalError))
        }
        let frameBody = server.settings.maximumFrameBody
        func answer<Body: SwiftProtobuf.Message>(_ result: Result<Body, IMStatusCode>) {
            reply(Self.frame(answerCommand, request, result))
        }
        switch request.command {
        case .join:
            let room = try request.decode(IMRoomRequest.self).room
            let largeRoomMembers = settings.largeRoomMembers
            store.join(room: room, user: user, maximumRooms: server.settings.maximumRoomsPerUser) { [weak server] joined in
                answer(joined.map(\.room.wire))
                guard case .success(let commit) = joined else { return }
                committed?(room, true, commit)
                // A large room adds no contacts and announces nobody: nothing more to do.
                guard commit.room.members <= largeRoomMembers, let server else { return }
                // The room's members are the user's contacts now: each side learns the other's presence.
                server.presenceAudienceChanged(for: user)
                notices.note(user, room: room, joined: true, seq: commit.seq, largeRoomMembers: largeRoomMembers, on: server)
            }
        case .leave:
            let room = try request.decode(IMRoomRequest.self).room
            let largeRoomMembers = settings.largeRoomMembers
            store.leave(room: room, user: user) { [weak server] left in
                answer(left.map(\.room.wire))
                guard case .success(let commit) = left else { return }
                committed?(room, false, commit)
                guard commit.room.members <= largeRoomMembers, let server else { return }
                notices.note(user, room: room, joined: false, seq: commit.seq, largeRoomMembers: largeRoomMembers, on: server)
            }
        case .listRooms:
            let asked = try request.decode(IMListRoomsRequest.self)
            let limit = PageFit.size(asked: asked.limit, default: settings.roomListPageSize, maximum: settings.maximumRoomListPageSize)
            // One more than the page holds: whether it is there says if more are available.
            store.rooms(for: user, after: asked.after, limit: limit + 1) { found in
                answer(
                    found.map { rooms in
                        var list = IMRoomList()
                        list.rooms = rooms.map(\.wire)
                        list.moreAvailable = PageFit.cut(&list.rooms, limit: limit, frameBody: frameBody)
                        return list
                    })
            }
        default:  // .history, the only request left (the first switch let no other through)
            let asked = try request.decode(IMHistoryRequest.self)
            guard var conversation = Recipient(asked.with) else {
                return answer(Result<IMHistoryPage, IMStatusCode>.failure(.badRequest))
            }
            if case .user(let name) = conversation, let canonical = server.canonicalUserName { conversation = .user(canonical(name)) }
            let limit = PageFit.size(asked: asked.limit, default: settings.historyPageSize, maximum: settings.maximumHistoryPageSize)
            let query = HistoryQuery(conversation: conversation, before: asked.beforeSeq)
            store.history(query, for: user, limit: limit) { found in
                answer(
                    found.map { found in
                        var page = found.wire
                        if PageFit.cut(&page.messages, limit: limit, frameBody: frameBody) { page.moreAvailable = true }
                        return page
                    })
            }
        }
    }

    /// `user` joined (`joined` true) or left `room` through another server that shares this one's
    /// store (a cluster's node, told by its bus), as change `seq` of the room's membership order
    /// (``MembershipCommit/seq``): this server's members of the room whose own join is older get the
    /// MEMBERSHIP notice, as for a JOIN or LEAVE here, however late it comes. Loop thread only.
    /// A change of a large room (``Settings/largeRoomMembers``, counted when the notices are made) is
    /// not announced, as here.
    public func membershipChanged(_ user: String, room: String, joined: Bool, seq: UInt64, on server: IMServer) {
        notices.note(user, room: room, joined: joined, seq: seq, largeRoomMembers: settings.largeRoomMembers, on: server)
    }

    /// Who sees `user`'s presence: the users who share a room that is not large
    /// (``Settings/largeRoomMembers``) or a direct conversation with them
    /// (``ChatStore/contacts(of:roomsOfAtMost:completion:)``), read from the store at each change and
    /// login. Nothing is cached here, so a JOIN or LEAVE on any node and a first direct message count
    /// at once; the read is the store's indexes (memory; SQLite's and PostgreSQL's member keys, SQLite
    /// keeping what it read only while nothing is written). A store that failed: nobody — presence is
    /// a state, the next change corrects it.
    public func presenceAudience(of user: String, on server: IMServer, completion: @escaping (IMPresenceAudience) -> Void) {
        guard let store = server.store as? any ChatStore else { return completion(.users([])) }
        store.contacts(of: user, roomsOfAtMost: settings.largeRoomMembers) { completion(.users((try? $0.get()) ?? [])) }
    }

    /// The audiences of several users an announcement settles together (``presenceAudience(of:on:completion:)``
    /// each), in one store read for all of them (``ChatStore/contacts(ofEach:roomsOfAtMost:completion:)``):
    /// SQLite reads each shared conversation's members once, PostgreSQL answers in one statement, so a
    /// room's crowd leaving together reads the room once, not once per member. A store that failed:
    /// nobody, for each of them.
    public func presenceAudiences(of users: [String], on server: IMServer, completion: @escaping ([IMPresenceAudience]) -> Void) {
        guard let store = server.store as? any ChatStore else {
            return presenceAudiencesOneByOne(of: users, on: server, completion: completion)
        }
        store.contacts(ofEach: users, roomsOfAtMost: settings.largeRoomMembers) { found in
            completion((try? found.get())?.map { .users($0) } ?? users.map { _ in .users([]) })
        }
    }

    /// ``Settings/largeRoomMembers``, which LOGIN_ACK announces so a client can show presence in a
    /// large room as unknown (``IMApplicationHandler/largeRoomMembers``).
    public var largeRoomMembers: Int? { settings.largeRoomMembers }

    private static func frame<Body: SwiftProtobuf.Message>(_ command: IMCommand, _ request: IMFrame, _ result: Result<Body, IMStatusCode>) -> IMFrame
    {
        switch result {
        case .success(let message): return IMFrame(command: command, serial: request.serial, message: message)
        case .failure(let code): return IMFrame(command: command, serial: request.serial, code: code)
        }
    }
}
