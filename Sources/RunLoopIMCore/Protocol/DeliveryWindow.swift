/// Flow control of one session's DELIVERs: how many messages and body bytes may wait for the client's
/// DELIVER_ACK at once, and how far into each conversation the session has sent.
///
/// The inbox in the store is the queue; the window only remembers, per conversation, the highest
/// ``IMMessage/conversationSeq`` sent on this session (``sentThrough``: the `after` of the next read)
/// and what is unacknowledged. So a session never holds more than the window of a backlog, however
/// large the backlog is, and a client that stops reading is paused — nothing more is queued for it —
/// rather than buffered until its connection breaks. Pure value; the session reads the store when
/// ``isRefillDue`` says so, one read at a time (``readStarted()`` … ``readFinished(asked:got:)`` or
/// ``readFailed()``): a store may answer on a later loop pass.
///
/// Each conversation's messages go out in conversationSeq order with no gap, because acknowledging a
/// message acknowledges every earlier one of its conversation (docs/PROTOCOL.md): a live message that
/// does not follow on from what this session sent in its conversation is left to a read of the store,
/// which returns the conversation from the member's cursor on.
public struct DeliveryWindow: Sendable, Equatable {
    // Every server session keeps one while idle (issue 22): the limits are kept at the wire's width
    // (LOGIN_ACK announces them as 32-bit numbers) and the flags last, so the window is 35 bytes, not 48.
    private let messageLimit: UInt32
    private let byteLimit: UInt32
    /// The most DELIVERs unacknowledged at once.
    public var maximumMessages: Int { Int(messageLimit) }
    /// The most DELIVER body bytes unacknowledged at once (at most `UInt32.max`, what LOGIN_ACK can
    /// announce). A message larger than the whole window still goes when nothing else is
    /// unacknowledged, so no message can stall the inbox.
    public var maximumBytes: Int { Int(byteLimit) }
    private var unacknowledged: [UInt64: Int] = [:]
    public private(set) var unacknowledgedBytes = 0
    /// Per conversation, the highest conversationSeq sent on this session (or passed: the user's own
    /// messages). Kept for the session's life — one number per conversation the session touched — since
    /// it is also what tells a live message whether it follows on.
    public private(set) var sentThrough: [IMConversation: UInt64] = [:]
    /// Whether the store may hold messages for this session that were not sent: the session reads
    /// them from the store (in order) instead of sending new ones directly.
    public private(set) var isBehind = true
    /// A read of the store is out: no other starts until it is answered.
    public private(set) var isReading = false
    /// A live message was refused while the read was out: it may have been stored after the read's
    /// snapshot, so a short answer does not prove the session caught up.
    private var refusedLiveWhileReading = false

    /// - Parameters:
    ///   - maximumMessages: the most DELIVERs unacknowledged at once; beyond `UInt32.max`, that.
    ///   - maximumBytes: the most DELIVER body bytes unacknowledged at once; beyond `UInt32.max`, that.
    public init(maximumMessages: Int, maximumBytes: Int) {
        precondition(maximumMessages > 0 && maximumBytes > 0, "a delivery window must hold something")
        messageLimit = UInt32(clamping: maximumMessages)
        byteLimit = UInt32(clamping: maximumBytes)
    }

    public var unacknowledgedCount: Int { unacknowledged.count }
    /// How many more DELIVERs may go before an acknowledgement.
    public var freeMessages: Int { maximumMessages - unacknowledged.count }

    /// Whether a DELIVER with a body of `bytes` may go now.
    public func admits(bytes: Int) -> Bool {
        unacknowledged.isEmpty || (unacknowledged.count < maximumMessages && unacknowledgedBytes + bytes <= maximumBytes)
    }

    /// A DELIVER of `message` went out: a read's (which starts each conversation at the member's
    /// cursor) or a live one that followed on.
    public mutating func sent(_ message: IMMessage, bytes: Int) {
        if message.conversationSeq > 0 {
            // One hash of the conversation, not two: this runs for every member of a room's fan-out.
            Self.raise(&sentThrough[message.conversation, default: 0], to: message.conversationSeq)
        }
        guard unacknowledged.updateValue(bytes, forKey: message.seq) == nil else { return }
        unacknowledgedBytes += bytes
    }

    /// The user sent `message`, so it needs no DELIVER on this session: the next one of its
    /// conversation still follows on, if this one did.
    public mutating func passed(_ message: IMMessage) {
        if message.conversationSeq > 0, Self.follows(message, through: sentThrough[message.conversation]) {
            sentThrough[message.conversation] = message.conversationSeq
        }
    }

    /// A message was stored for this session's user while it is online: `true` if it goes out now
    /// (caught up, the window admits it, and it follows on from what this session sent in its
    /// conversation — or opens the conversation); otherwise the session is behind and reads it from
    /// the store, in order. A message at or below ``sentThrough`` went out already (it is offered again
    /// when its sender resent it and the store's answer to the first SEND was lost).
    public mutating func offerLive(_ message: IMMessage, bytes: Int) -> Bool {
        let through = sentThrough[message.conversation]
        if let through, message.conversationSeq <= through, message.conversationSeq > 0 { return false }
        if isReading { refusedLiveWhileReading = true }
        if isBehind { return false }
        // Unknown conversation past its first message, or a gap (a message whose store answer was
        // lost): what comes before it may be unacknowledged, and acknowledging this one would
        // acknowledge that too. The store has both, in order.
        guard Self.follows(message, through: through), admits(bytes: bytes) else {
            isBehind = true
            return false
        }
        return true
    }

    /// Whether the session should read the store now: behind, with room, and no read out.
    public var isRefillDue: Bool { isBehind && !isReading && freeMessages > 0 }

    /// A read of the store for ``freeMessages`` messages past ``sentThrough`` went out.
    public mutating func readStarted() {
        isReading = true
        refusedLiveWhileReading = false
    }

    /// The read asked for `asked` messages and got `got`: fewer means the session has caught up with
    /// the inbox — unless a live message was refused meanwhile, which the read may not have seen.
    public mutating func readFinished(asked: Int, got: Int) {
        isReading = false
        if got < asked && !refusedLiveWhileReading { isBehind = false }
    }

    /// The read failed: still behind; the next trigger (an acknowledgement, a retry) reads again.
    public mutating func readFailed() { isReading = false }

    /// The store may hold messages no live offer brought (a cluster's bus lost some): behind again, and
    /// a read in flight does not count as caught up, since its snapshot may predate them.
    public mutating func storeMayHaveMore() {
        isBehind = true
        if isReading { refusedLiveWhileReading = true }
    }

    /// The window filled before a read's messages were all sent: the rest are read again later.
    public mutating func stoppedRefill() { isBehind = true }

    /// The client acknowledged `seqs`. Returns whether a refill is due now.
    public mutating func acknowledged(_ seqs: [UInt64]) -> Bool {
        for seq in seqs {
            if let bytes = unacknowledged.removeValue(forKey: seq) { unacknowledgedBytes -= bytes }
        }
        return isRefillDue
    }

    /// Whether `message` comes right after `through`, what this session sent of its conversation (a
    /// first message has nothing before it).
    private static func follows(_ message: IMMessage, through: UInt64?) -> Bool {
        // 0: a store that does not number conversations; its messages go in the order it gives them.
        message.conversationSeq == 0 || message.conversationSeq == (through ?? 0) + 1
    }

    private static func raise(_ value: inout UInt64, to candidate: UInt64) {
        if candidate > value { value = candidate }
    }
}
