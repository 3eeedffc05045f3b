import RunLoopChat
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore

/// The store's asynchronous calls, waited for: what a test asks and checks, one line each.
extension PostgresChatStore {
    func send(_ text: String, id: String, from sender: String, to recipient: IMRecipient, at now: UInt64 = 1_000) throws -> IMStoreResult {
        try waitFor(loop) { store(Self.outgoing(text, id: id, to: recipient), from: sender, nowMilliseconds: now, completion: $0) }
    }

    /// Starts a send without waiting for it: its answer lands in the box.
    func startSend(_ text: String, id: String, from sender: String, to recipient: IMRecipient) -> Box<IMStoreResult> {
        let answer = Box<IMStoreResult>()
        store(Self.outgoing(text, id: id, to: recipient), from: sender, nowMilliseconds: 1_000) { answer.value = $0 }
        return answer
    }

    /// A SEND as a client makes it.
    static func outgoing(_ text: String, id: String, to recipient: IMRecipient) -> IMMessage {
        IMMessage(id: id, from: "", recipient: recipient, text: text, seq: 0, sentAtMilliseconds: 0)
    }

    /// The stored message of a send that must succeed.
    func stored(_ text: String, id: String, from sender: String, to recipient: IMRecipient) throws -> IMMessage {
        guard case .stored(let message, _, _) = try send(text, id: id, from: sender, to: recipient) else {
            throw TestFailure("\(id) from \(sender) not stored")
        }
        return message
    }

    func inbox(_ user: String, after: [IMConversation: UInt64] = [:], limit: Int = 100) throws -> [IMMessage] {
        try waitFor(loop) { undelivered(for: user, after: after, limit: limit, completion: $0) }.get()
    }

    func abandoning(_ ids: [String], from sender: String) throws -> [IMAbandonOutcome] {
        try waitFor(loop) { abandon(ids, from: sender, completion: $0) }.get()
    }

    func joining(_ room: String, _ user: String, maximumRooms: Int? = nil) throws -> Result<Room, IMStatusCode> {
        try committing(join: true, room, user, maximumRooms: maximumRooms).map(\.room)
    }

    func leaving(_ room: String, _ user: String) throws -> Result<Room, IMStatusCode> {
        try committing(join: false, room, user).map(\.room)
    }

    /// A JOIN (`join` true) or LEAVE as the store committed it, with its membership number.
    func committing(join: Bool, _ room: String, _ user: String, maximumRooms: Int? = nil) throws -> Result<MembershipCommit, IMStatusCode> {
        try waitFor(loop) { completion in
            if join {
                self.join(room: room, user: user, maximumRooms: maximumRooms, completion: completion)
            } else {
                leave(room: room, user: user, completion: completion)
            }
        }
    }

    func members(_ room: String) throws -> [RoomMember] {
        try waitFor(loop) { members(ofRoom: room, completion: $0) }.get()
    }

    /// `user`'s rooms with their joins' numbers (the cluster's read).
    func joinedRooms(_ user: String) throws -> [String: UInt64] {
        try roomJoins(user).mapValues(\.joinedSeq)
    }

    /// `user`'s rooms with their joins' numbers and the rooms' numbers at the read.
    func roomJoins(_ user: String) throws -> [String: RoomJoin] {
        try waitFor(loop) { rooms(of: user, completion: $0) }.get()
    }

    func roomList(_ user: String, after: String = "", limit: Int = 100) throws -> [Room] {
        try waitFor(loop) { rooms(for: user, after: after, limit: limit, completion: $0) }.get()
    }

    func page(_ conversation: IMRecipient, before: UInt64 = 0, for user: String, limit: Int) throws -> Result<HistoryPage, IMStatusCode> {
        try waitFor(loop) { history(HistoryQuery(conversation: conversation, before: before), for: user, limit: limit, completion: $0) }
    }

    func login(_ user: String, _ password: String) throws -> IMLoginVerdict {
        try waitFor(loop) { authenticate(IMLoginAttempt(user: user, password: password), completion: $0) }
    }
}

/// Where a callback's value lands.
final class Box<Value> {
    var value: Value?
}
