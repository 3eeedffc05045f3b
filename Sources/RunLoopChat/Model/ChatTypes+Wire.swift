import RunLoopIM
import RunLoopIMCore

// Conversions between the chat's domain types and the protobuf messages of docs/PROTOCOL.md §8: the
// only place that knows both (the message's own are in RunLoopIMCore, beside its type).

extension Recipient {
    /// The conversation a HISTORY asks for; `nil` for a request that names none, which is refused.
    init?(_ wire: IMHistoryRequest.OneOf_With?) {
        switch wire {
        case .user(let name)?: self = .user(name)
        case .room(let name)?: self = .room(name)
        case nil: return nil
        }
    }

    func historyRequest(before: UInt64, limit: Int) -> IMHistoryRequest {
        var request = IMHistoryRequest()
        switch self {
        case .user(let name): request.user = name
        case .room(let name): request.room = name
        }
        request.beforeSeq = before
        request.limit = UInt32(clamping: max(0, limit))
        return request
    }
}

extension Room {
    init(_ wire: IMRoomInfo) {
        self.init(name: wire.name, members: Int(wire.members), isMember: wire.joined)
    }

    var wire: IMRoomInfo { IMRoomInfo(name: name, members: members, joined: isMember) }
}

extension IMRoomInfo {
    /// A room's description as one user sees it.
    package init(name: String, members: Int, joined: Bool) {
        self.init()
        self.name = name
        self.members = UInt32(clamping: members)
        self.joined = joined
    }
}

extension HistoryPage {
    init(_ wire: IMHistoryPage) {
        self.init(messages: wire.messages.map(ChatMessage.init), moreAvailable: wire.moreAvailable)
    }

    var wire: IMHistoryPage {
        var page = IMHistoryPage()
        page.messages = messages.map(\.wire)
        page.moreAvailable = moreAvailable
        return page
    }
}

extension MembershipChange {
    init(_ wire: IMMembershipNotice) {
        self.init(room: wire.room, user: wire.user, joined: wire.joined, members: Int(wire.members))
    }

    var wire: IMMembershipNotice {
        var notice = IMMembershipNotice()
        notice.room = room
        notice.user = user
        notice.joined = joined
        notice.members = UInt32(clamping: members)
        return notice
    }
}

extension ChatRequestError {
    init(_ error: IMClientError) {
        self = error == .notOnline ? .notOnline : .closed
    }
}
