/// Flow control of one session's DELIVERs: how many messages and body bytes may wait for the client's
/// DELIVER_ACK at once, and where in the user's inbox the session is.
///
/// The inbox in the store is the queue; the window only remembers a cursor (the highest `seq` sent on
/// this session) and what is unacknowledged. So a session never holds more than the window of a
/// backlog, however large the backlog is, and a client that stops reading is paused — nothing more is
/// queued for it — rather than buffered until its connection breaks. Pure value; the session reads
/// the store when ``isRefillDue`` says so, one read at a time (``readStarted()`` …
/// ``readFinished(asked:got:)`` or ``readFailed()``): a store may answer on a later loop pass.
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
    /// A read of the store is out: no other starts until it is answered.
    public private(set) var isReading = false
    /// A live message was refused while the read was out: it may have been stored after the read's
    /// snapshot, so a short answer does not prove the session caught up.
    private var refusedLiveWhileReading = false
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
    /// store later, in order. A message at or below the cursor went out on this session already (it
    /// is offered again when its sender resent it and the store's answer to the first SEND was lost).
    public mutating func offerLive(seq: UInt64, bytes: Int) -> Bool {
        if seq <= cursor { return false }
        if isReading { refusedLiveWhileReading = true }
        if isBehind { return false }
        if admits(bytes: bytes) { return true }
        isBehind = true
        return false
    }

    /// Whether the session should read the store now: behind, with room, and no read out.
    public var isRefillDue: Bool { isBehind && !isReading && freeMessages > 0 }

    /// A read of the store for ``freeMessages`` messages past the cursor went out.
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

    /// The window filled before a refill's messages were all sent: the rest are read again later.
    public mutating func stoppedRefill() { isBehind = true }

    /// The client acknowledged `seqs`. Returns whether a refill is due now.
    public mutating func acknowledged(_ seqs: [UInt64]) -> Bool {
        for seq in seqs {
            if let bytes = unacknowledged.removeValue(forKey: seq) { unacknowledgedBytes -= bytes }
        }
        return isRefillDue
    }
}
