import RunLoopKit

/// The client's unsettled messages in send order: what is queued, in flight, or being abandoned.
///
/// Bounded by `limit`. A message leaves only when it is settled (stored or failed), so across
/// reconnects the same ids go out again and the server's de-duplication makes the resends harmless.
struct Outbox: Sendable {
    enum Phase: Equatable, Sendable {
        /// Waiting to be written (or to be written again after a reconnect).
        case queued
        /// Written on the current connection; resent at `resendAt` if unacknowledged.
        case inFlight(resendAt: LoopInstant)
        /// Given up on: the server must say whether it stored it. `asked` once ABANDON went out on
        /// the current connection.
        case abandoning(asked: Bool)
    }

    struct Entry: Sendable {
        var message: IMChatMessage
        var phase: Phase
        /// The SEND body's length: what the server's size limit judges.
        let bodySize: Int
        /// Sends on live connections so far.
        var attempts = 0
        /// Written to any connection at least once: from then on only the server knows its fate.
        var wasWritten = false
        /// Written on a connection that has ended: the server may have stored it under the limits of
        /// that connection, so a size refusal now cannot settle it; only ABANDON can.
        var writtenOnEarlierConnection = false
        /// The serial of its latest SEND, to match a SEND_ACK whose `id` the server could not read.
        var serial: UInt32 = 0
        /// Being abandoned because it is over the server's size limit: a refused ABANDON settles it
        /// as too large rather than as unacknowledged.
        var oversize: (bytes: Int, limit: Int)?
    }

    let limit: Int
    private(set) var entries: [Entry] = []

    init(limit: Int) {
        precondition(limit > 0, "outboxLimit must be positive")
        self.limit = limit
    }

    var count: Int { entries.count }
    var messages: [IMChatMessage] { entries.map(\.message) }
    var unsettledIDs: [String] { entries.map(\.message.id) }

    mutating func enqueue(_ message: IMChatMessage, bodySize: Int) throws(IMClientError) {
        guard entries.count < limit else { throw .outboxFull(limit: limit) }
        guard index(of: message.id) == nil else { throw .duplicateID(message.id) }
        entries.append(Entry(message: message, phase: .queued, bodySize: bodySize))
    }

    func index(of id: String) -> Int? { entries.firstIndex { $0.message.id == id } }

    /// The message in flight whose latest SEND had `serial`.
    func index(ofSerial serial: UInt32) -> Int? {
        entries.firstIndex { if case .inFlight = $0.phase { return $0.serial == serial } else { return false } }
    }

    subscript(index: Int) -> Entry {
        get { entries[index] }
        set { entries[index] = newValue }
    }

    var indices: Range<Int> { entries.indices }

    @discardableResult
    mutating func remove(_ id: String) -> Entry? {
        guard let index = index(of: id) else { return nil }
        return entries.remove(at: index)
    }

    /// Whether a sent message or an abandon request waits for the server's answer.
    var isAwaitingAnswer: Bool {
        entries.contains {
            switch $0.phase {
            case .inFlight, .abandoning(asked: true): return true
            default: return false
            }
        }
    }

    var earliestResend: LoopInstant? {
        entries.compactMap { if case .inFlight(let at) = $0.phase { return at } else { return nil } }.min()
    }

    /// The connection is gone: what was in flight goes out again after the next login, and abandon
    /// requests must be asked again there.
    mutating func connectionLost() {
        for index in entries.indices {
            if entries[index].wasWritten { entries[index].writtenOnEarlierConnection = true }
            switch entries[index].phase {
            case .inFlight: entries[index].phase = .queued
            case .abandoning: entries[index].phase = .abandoning(asked: false)
            case .queued: break
            }
        }
    }

    mutating func markAbandonSent(_ ids: [String]) {
        for id in ids {
            if let index = index(of: id) { entries[index].phase = .abandoning(asked: true) }
        }
    }
}
