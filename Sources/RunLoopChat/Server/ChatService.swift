public import RunLoopIM
public import RunLoopIMCore
import SwiftProtobuf

/// The chat application on an ``IMServer``: rooms (JOIN, LEAVE, LIST_ROOMS) and conversation history
/// (HISTORY) over the server's ``IMServerStore``, each answer made to fit the server's frame limit.
/// The server keeps sessions, delivery and presence; this answers what docs/PROTOCOL.md §8 describes.
///
/// ```swift
/// let server = IMServer(store: InMemoryIMStore())
/// server.applicationHandler = ChatService()
/// try server.listen()
/// ```
///
/// Threads: the server calls it on its loop's thread; it keeps no state of its own.
public struct ChatService: IMApplicationHandler, Sendable {
    /// How long pages are. A page is also cut to fit the server's frame limit.
    public struct Settings: Sendable, Equatable {
        /// Messages in a HISTORY page when the client asks for 0, and the most it may ask for.
        public var historyPageSize = 50
        public var maximumHistoryPageSize = 500
        /// Rooms in a ROOM_LIST page when the client asks for 0, and the most it may ask for.
        public var roomListPageSize = 100
        public var maximumRoomListPageSize = 500

        public init() {}
    }

    public var settings: Settings

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// Answers JOIN, LEAVE, LIST_ROOMS or HISTORY (``IMApplicationHandler``): the server passes
    /// nothing else (``IMCommand/isApplicationRequest``).
    public func answer(_ request: IMFrame, from user: String, on server: IMServer) throws(IMFrameError) -> IMFrame {
        let store = server.store
        let frameBody = server.settings.maximumFrameBody
        switch request.command {
        case .join:
            let room = try request.decode(IMRoomRequest.self).room
            return reply(to: request, .joinAck, store.join(room: room, user: user, maximumRooms: server.settings.maximumRoomsPerUser))
        case .leave:
            let room = try request.decode(IMRoomRequest.self).room
            return reply(to: request, .leaveAck, store.leave(room: room, user: user))
        case .listRooms:
            let asked = try request.decode(IMListRoomsRequest.self)
            let limit = PageFit.size(asked: asked.limit, default: settings.roomListPageSize, maximum: settings.maximumRoomListPageSize)
            var list = IMRoomList()
            // One more than the page holds: whether it is there says if more are available.
            list.rooms = store.rooms(for: user, after: asked.after, limit: limit + 1)
            list.moreAvailable = PageFit.cut(&list.rooms, limit: limit, frameBody: frameBody)
            return IMFrame(command: .roomList, serial: request.serial, message: list)
        case .history:
            var asked = try request.decode(IMHistoryRequest.self)
            if case .user(let name)? = asked.with, let canonical = server.canonicalUserName { asked.user = canonical(name) }
            let limit = PageFit.size(asked: asked.limit, default: settings.historyPageSize, maximum: settings.maximumHistoryPageSize)
            let page = store.history(asked, for: user, limit: limit).map { page in
                var page = page
                if PageFit.cut(&page.messages, limit: limit, frameBody: frameBody) { page.moreAvailable = true }
                return page
            }
            return reply(to: request, .historyPage, page)
        default:
            preconditionFailure("IMServer passes application requests only, not \(request.header.command)")
        }
    }

    private func reply<M: SwiftProtobuf.Message>(to request: IMFrame, _ command: IMCommand, _ result: Result<M, IMStatusCode>) -> IMFrame {
        switch result {
        case .success(let message): return IMFrame(command: command, serial: request.serial, message: message)
        case .failure(let code): return IMFrame(command: command, serial: request.serial, code: code)
        }
    }
}
