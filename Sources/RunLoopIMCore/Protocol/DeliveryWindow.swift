/// Flow control of one session's DELIVERs: how many messages and body bytes may wait for the client's
/// DELIVER_ACK at once, and where in the user's inbox the session is.
///
/// The inbox in the store is the queue; the window only remembers a cursor (the highest `seq` sent on
/// this session) and what is unacknowledged. So a session never holds more than the window of a
/// backlog, however large the backlog is, and a client that stops reading is paused — nothing more is
/// queued for it — rather than buffered until its connection breaks. Pure value; the session reads
/// the store when ``isBehind`` and ``freeMessages`` say a refill is due.
public struct DeliveryWindow: Sendable, Equatable {
    /// The most DELIVERs unacknowledged at once.
    public let maximumMessages: Int
    /// The most DELIVER body bytes unacknowledged at once. A message larger than the whole window
    /// still goes when nothing else is unacknowledged, so no message can stall the inbox.
    public let maximumBytes: Int
    /// The highest `seq` sent on this session.
    public private(set) var cursor: UInt64 = 0
    /// Whether the store may hold messages for this session past ``cursor`` that were not sent: the
    /// session reads them from the store (in seq order) instead of sending new ones directly.
    public private(set) var isBehind = true
    private var unacknowledged: [UInt64: Int] = [:]
    public private(set) var unacknowledgedBytes = 0

    public init(maximumMessages: Int, maximumBytes: Int) {
        precondition(maximumMessages > 0 && maximumBytes > 0, "a delivery window must hold something")
        self.maximumMessages = maximumMessages
        self.maximumBytes = maximumBytes
    }

    public var unacknowledgedCount: Int { unacknowledged.count }
    /// How many more DELIVERs may go before an acknowledgement.
    public var freeMessages: Int { maximumMessages - unacknowledged.count }

    /// Whether a DELIVER with a body of `bytes` may go now.
    public func admits(bytes: Int) -> Bool {
        unacknowledged.isEmpty || (unacknowledged.count < maximumMessages && unacknowledgedBytes + bytes <= maximumBytes)
    }

    /// A DELIVER of `seq` went out.
    public mutating func sent(seq: UInt64, bytes: Int) {
        guard unacknowledged.updateValue(bytes, forKey: seq) == nil else { return }
        unacknowledgedBytes += bytes
        cursor = max(cursor, seq)
    }

    /// A message was stored for this session's user while it is online: `true` if it goes out now
    /// (caught up, and the window admits it); otherwise the session is behind and reads it from the
    /// store later, in order.
    public mutating func offerLive(bytes: Int) -> Bool {
        if isBehind { return false }
        if admits(bytes: bytes) { return true }
        isBehind = true
        return false
    }

    /// A read of the store asked for `asked` messages past the cursor and got `got`: fewer means the
    /// session has caught up with the inbox.
    public mutating func refilled(asked: Int, got: Int) {
        if got < asked { isBehind = false }
    }

    /// The window filled before a refill's messages were all sent: the rest are read again later.
    public mutating func stoppedRefill() { isBehind = true }

    /// The client acknowledged `seqs`. Returns whether a refill is due now.
    public mutating func acknowledged(_ seqs: [UInt64]) -> Bool {
        for seq in seqs {
            if let bytes = unacknowledged.removeValue(forKey: seq) { unacknowledgedBytes -= bytes }
        }
        return isBehind && freeMessages > 0
    }
}
