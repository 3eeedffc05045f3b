import RunLoopIM
public import RunLoopIMCore

/// Who a message is for: one user (a direct message) or every member of a room. The client's own
/// type, shared with ``IMClient/send(_:to:id:)``.
public typealias Recipient = IMRecipient

/// A message as the server stored it: received live, or read in a ``HistoryPage``. The IM layer's
/// own type, shared with `IMClient` and the stores, so there is one message type, not two.
public typealias ChatMessage = IMMessage

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

/// Which page of a conversation's history a ``ChatStore`` is asked for: the conversation with a user
/// (direct messages both ways) or in a room, and where the page ends.
public struct HistoryQuery: Hashable, Sendable {
    /// `.user`: the direct conversation between the asking user and this one; `.room`: that room's.
    public var conversation: Recipient
    /// Only messages with a smaller `seq`; 0: from the newest.
    public var before: UInt64

    public init(conversation: Recipient, before: UInt64 = 0) {
        self.conversation = conversation
        self.before = before
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

    /// A page of `messages` (newest first) that older ones may follow: the next page starts below
    /// the smallest `seq` here.
    public init(messages: [ChatMessage], moreAvailable: Bool) {
        self.init(messages: messages, nextBefore: moreAvailable ? messages.map(\.seq).min() : nil)
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

/// A member joined or left a room this user is in (the server's MEMBERSHIP notice), with the room's
/// member count after it: what keeps a client's member counts current without asking.
public struct MembershipChange: Hashable, Sendable {
    public var room: String
    /// Who joined or left.
    public var user: String
    public var joined: Bool
    /// The room's members after the change.
    public var members: Int

    public init(room: String, user: String, joined: Bool, members: Int) {
        self.room = room
        self.user = user
        self.joined = joined
        self.members = members
    }
}

/// A room became large or stopped being large, by the last count the client heard of it
/// (docs/PROTOCOL.md §8): past the server's large-room size the server tells nobody of its members'
/// presence or of its joins and leaves, so a client shows its members' presence as unknown.
public struct LargeRoomChange: Hashable, Sendable {
    /// The room as last heard of: the count that decided it, and whether the user is in it.
    public var room: Room
    /// Over the size now: its members' presence is unknown.
    public var isLarge: Bool

    public init(room: Room, isLarge: Bool) {
        self.room = room
        self.isLarge = isLarge
    }
}
