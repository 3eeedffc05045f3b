import RunLoopIM
public import RunLoopIMCore

/// Who a message is for: one user (a direct message) or every member of a room. The client's own
/// type, shared with ``IMClient/send(_:to:id:)``.
public typealias Recipient = IMRecipient

/// A message as the server stored it: received live, or read in a ``HistoryPage``.
public struct ChatMessage: Hashable, Sendable {
    /// The sender's id for it, unique among that sender's messages.
    public var id: String
    /// The sender's user name.
    public var from: String
    /// As the sender wrote it: `.user` names the receiving user of a direct message.
    public var recipient: Recipient
    public var text: String
    /// The server's sequence number, increasing in storage order.
    public var seq: UInt64
    /// When the server stored it: milliseconds since 1970-01-01 UTC.
    public var sentAtMilliseconds: UInt64

    public init(id: String, from: String, recipient: Recipient, text: String, seq: UInt64, sentAtMilliseconds: UInt64) {
        self.id = id
        self.from = from
        self.recipient = recipient
        self.text = text
        self.seq = seq
        self.sentAtMilliseconds = sentAtMilliseconds
    }
}

/// A room as JOIN, LEAVE and the room list describe it.
public struct Room: Hashable, Sendable {
    public var name: String
    /// Members now (after the join or leave it answers).
    public var members: Int
    /// Whether the asking user is a member.
    public var isMember: Bool

    public init(name: String, members: Int, isMember: Bool) {
        self.name = name
        self.members = members
        self.isMember = isMember
    }
}

/// One page of a conversation's history, newest first.
public struct HistoryPage: Hashable, Sendable {
    public var messages: [ChatMessage]
    /// Where the next older page starts: pass it as `before` to
    /// ``ChatClient/history(with:before:limit:completion:)``; `nil` at the start of the conversation.
    public var nextBefore: UInt64?

    public init(messages: [ChatMessage], nextBefore: UInt64?) {
        self.messages = messages
        self.nextBefore = nextBefore
    }

    /// Whether older messages are left to read.
    public var moreAvailable: Bool { nextBefore != nil }
}

/// A user came online (their first session) or went offline (their last one ended). A state, not an
/// event: the same one may come twice.
public struct PresenceChange: Hashable, Sendable {
    public var user: String
    public var isOnline: Bool

    public init(user: String, isOnline: Bool) {
        self.user = user
        self.isOnline = isOnline
    }
}
