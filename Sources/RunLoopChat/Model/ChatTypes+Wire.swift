import RunLoopIM
import RunLoopIMCore

// Conversions between the domain types and the protobuf messages of docs/PROTOCOL.md: the only place
// that knows both.

extension Recipient {
    /// `nil` for a message without one, which a server refuses and never stores.
    init?(_ wire: IMChatMessage.OneOf_To?) {
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

extension ChatMessage {
    /// A stored message always has a recipient (a SEND without one is refused); one that has none
    /// anyway is taken as a direct message to an unnamed user rather than dropped.
    init(_ wire: IMChatMessage) {
        self.init(
            id: wire.id, from: wire.from, recipient: Recipient(wire.to) ?? .user(""), text: wire.text,
            seq: wire.seq, sentAtMilliseconds: wire.sentAtMs)
    }
}

extension Room {
    init(_ wire: IMRoomInfo) {
        self.init(name: wire.name, members: Int(wire.members), isMember: wire.joined)
    }
}

extension HistoryPage {
    init(_ wire: IMHistoryPage) {
        let smallest = wire.messages.map(\.seq).min()
        self.init(messages: wire.messages.map(ChatMessage.init), nextBefore: wire.moreAvailable ? smallest : nil)
    }
}

extension PresenceChange {
    init(_ wire: IMPresenceNotice) {
        self.init(user: wire.user, isOnline: wire.online)
    }
}

extension ChatRequestError {
    init(_ error: IMClientError) {
        self = error == .notOnline ? .notOnline : .closed
    }
}
