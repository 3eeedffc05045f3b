public import RunLoopIMCore

/// What the server decided about a login.
public enum IMLoginVerdict: Equatable, Sendable {
    /// Logged in as the user named in the LOGIN.
    case accepted
    /// Logged in as `user`, the account's canonical name for the one in the LOGIN (a deployment
    /// whose names ignore case answers `Alice` with the account `alice`): the session's user, in
    /// LOGIN_ACK, presence and every limit.
    case acceptedAs(user: String)
    case refused(IMStatusCode, reason: String)
}

/// What storing a sent message gave.
public enum IMStoreResult: Equatable, Sendable {
    /// Stored (or stored before, for a resend: `isNew` false) as `message` — with `seq`, `from` and
    /// `sentAtMilliseconds` filled in — for `recipients` (the sender excluded).
    case stored(IMMessage, recipients: [String], isNew: Bool)
    /// Not stored, and never will be under this id (unknown recipient, abandoned id, …).
    case refused(IMStatusCode)
}

/// Where an ``IMServer`` keeps accounts, messages and each user's undelivered inbox. The server calls it
/// on its loop's thread only, synchronously; an implementation that blocks blocks the loop.
///
/// The delivery guarantees rest on four rules an implementation keeps:
/// 1. ``store(_:from:nowMilliseconds:)`` is idempotent per (sender, id): a resend gets the first `seq`.
/// 2. An id the sender abandoned before it was stored is refused forever after.
/// 3. A stored message stays in each recipient's inbox until that recipient acknowledges its `seq`.
/// 4. ``undelivered(for:after:limit:)`` returns the inbox in `seq` order.
/// Persist all four (``InMemoryIMStore`` does not survive a restart; the chat node's SQLite store does).
///
/// Rooms and history are the chat application's: `RunLoopChat`'s `ChatStore` adds them to this.
public protocol IMServerStore: AnyObject {
    /// Checks credentials.
    func authenticate(_ login: IMLoginAttempt) -> IMLoginVerdict
    /// Stores a message from `sender` (its `from`, `seq` and `sentAtMilliseconds` are the store's to
    /// fill in).
    func store(_ message: IMMessage, from sender: String, nowMilliseconds: UInt64) -> IMStoreResult
    /// Settles ids the sender gave up on: stored ones with their seq, the others refused from now on.
    func abandon(_ ids: [String], from sender: String) -> [IMAbandonOutcome]
    /// At most `limit` messages stored for `user`, not acknowledged by them and with a `seq` above
    /// `after`, in seq order: one window of the inbox (a session never holds a whole backlog).
    func undelivered(for user: String, after seq: UInt64, limit: Int) -> [IMMessage]
    /// `user` has these messages: drop them from their inbox.
    func acknowledge(_ seqs: [UInt64], for user: String)
}

extension IMServerStore {
    /// The whole inbox of `user` in seq order (tests and tools: a server reads it a window at a time).
    public func undelivered(for user: String) -> [IMMessage] {
        undelivered(for: user, after: 0, limit: .max)
    }
}

/// The rules for a room name, stated once (docs/PROTOCOL.md §8): 1 to ``maximumScalars`` Unicode
/// scalars (code points), so at most 4 × that many UTF-8 bytes, with no spaces at either end and none
/// of the characters that hide or disguise text — controls (C0, C1), format characters (zero-width
/// spaces and joiners, bidirectional overrides such as U+202E, U+FEFF), line and paragraph separators
/// (U+2028, U+2029), surrogates, private-use and unassigned code points.
public enum RoomName {
    /// The most Unicode scalars a room name may have.
    public static let maximumScalars = 64

    public static func isValid(_ name: String) -> Bool {
        let scalars = name.unicodeScalars
        guard !scalars.isEmpty, scalars.count <= maximumScalars, name == name.trimmingWhitespace else { return false }
        return !scalars.contains { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned: return true
            default: return false
            }
        }
    }
}

extension String {
    var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}

/// An ``IMServerStore`` in memory: for tests, samples and benchmarks. Everything is lost with the
/// process, so across a server restart only the clients' own resends and de-duplication hold.
public final class InMemoryIMStore: IMServerStore {
    /// Accounts and passwords; with `nil`, any user name logs in with any password.
    public var accounts: [String: String]?
    /// Room name → members.
    public var rooms: [String: Set<String>] = [:]
    private var nextSeq: UInt64 = 1
    private var accepted: [String: IMMessage] = [:]
    private var abandoned: Set<String> = []
    private var inboxes: [String: [IMMessage]] = [:]
    private var known: Set<String> = []
    /// Every stored message in seq order, for history (RunLoopChat's `ChatStore` conformance).
    package private(set) var log: [IMMessage] = []

    public init(accounts: [String: String]? = nil) {
        self.accounts = accounts
        known = Set(accounts?.keys.map { $0 } ?? [])
    }

    /// Every message stored so far, by seq (for tests and samples).
    public private(set) var storedCount = 0

    public func authenticate(_ login: IMLoginAttempt) -> IMLoginVerdict {
        if let accounts, accounts[login.user] != login.password {
            return .refused(.authenticationFailed, reason: "unknown user or wrong password")
        }
        known.insert(login.user)
        return .accepted
    }

    public func store(_ message: IMMessage, from sender: String, nowMilliseconds: UInt64) -> IMStoreResult {
        let key = sender + "\u{0}" + message.id
        if let earlier = accepted[key] { return .stored(earlier, recipients: recipients(of: earlier, from: sender), isNew: false) }
        if abandoned.contains(key) { return .refused(.badRequest) }
        guard !message.id.isEmpty else { return .refused(.badRequest) }
        var stored = message
        stored.from = sender
        stored.seq = nextSeq
        stored.sentAtMilliseconds = nowMilliseconds
        let targets = recipients(of: stored, from: sender)
        if case .user(let name) = stored.recipient, accounts != nil, !known.contains(name) { return .refused(.unknownRecipient) }
        if case .room(let name) = stored.recipient, rooms[name]?.contains(sender) != true { return .refused(.unknownRecipient) }
        nextSeq += 1
        storedCount += 1
        accepted[key] = stored
        log.append(stored)
        for user in targets { inboxes[user, default: []].append(stored) }
        return .stored(stored, recipients: targets, isNew: true)
    }

    public func abandon(_ ids: [String], from sender: String) -> [IMAbandonOutcome] {
        ids.map { id in
            let key = sender + "\u{0}" + id
            if let earlier = accepted[key] { return IMAbandonOutcome(id: id, storedSeq: earlier.seq) }
            abandoned.insert(key)
            return IMAbandonOutcome(id: id, storedSeq: nil)
        }
    }

    public func undelivered(for user: String, after seq: UInt64, limit: Int) -> [IMMessage] {
        guard let inbox = inboxes[user], limit > 0 else { return [] }
        // The inbox is in seq order: find the first entry past `seq` by bisection.
        var low = 0, high = inbox.count
        while low < high {
            let middle = (low + high) / 2
            if inbox[middle].seq <= seq { low = middle + 1 } else { high = middle }
        }
        return Array(inbox[low..<(low + min(inbox.count - low, limit))])
    }

    public func acknowledge(_ seqs: [UInt64], for user: String) {
        let done = Set(seqs)
        inboxes[user]?.removeAll { done.contains($0.seq) }
    }

    private func recipients(of message: IMMessage, from sender: String) -> [String] {
        switch message.recipient {
        case .user(let name): return name == sender ? [] : [name]
        case .room(let name): return (rooms[name] ?? []).filter { $0 != sender }.sorted()
        }
    }
}
