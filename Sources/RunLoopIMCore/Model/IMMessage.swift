/// A chat message as the server stored it: delivered live (``IMClientAction/received(_:)``), kept in
/// an ``IMServerStore``, or read back as history. The one message type of the public API; the
/// Protocol Buffers message that carries it (docs/PROTOCOL.md §5) stays inside the package.
///
/// A value: it may cross threads.
public struct IMMessage: Hashable, Sendable {
    /// The sender's id for it, unique among that sender's messages (the server and the receivers
    /// de-duplicate by `from` and `id`).
    public var id: String
    /// The sender's user name, set by the server; empty in a message not stored yet.
    public var from: String
    /// As the sender wrote it: `.user` names the receiving user of a direct message.
    public var recipient: IMRecipient
    public var text: String
    /// The server's sequence number, increasing in storage order; 0 in a message not stored yet.
    public var seq: UInt64
    /// When the server stored it: milliseconds since 1970-01-01 UTC; 0 in a message not stored yet.
    public var sentAtMilliseconds: UInt64
    /// Its place in its ``IMConversation``: 1, 2, 3, … with no gaps, in commit order, assigned by the
    /// store with ``seq``; 0 in a message not stored yet (and from a server that does not number
    /// conversations).
    public var conversationSeq: UInt64

    public init(
        id: String, from: String, recipient: IMRecipient, text: String, seq: UInt64, sentAtMilliseconds: UInt64,
        conversationSeq: UInt64 = 0
    ) {
        self.id = id
        self.from = from
        self.recipient = recipient
        self.text = text
        self.seq = seq
        self.sentAtMilliseconds = sentAtMilliseconds
        self.conversationSeq = conversationSeq
    }

    /// The conversation it belongs to (its sender's and recipient's, or its room).
    public var conversation: IMConversation { IMConversation(from: from, to: recipient) }
}
