public import RunLoopIMCore

/// An ``IMServerStore`` in memory: for tests, samples and benchmarks. Everything is lost with the
/// process, so across a server restart only the clients' own resends and de-duplication hold.
public final class InMemoryIMStore: SynchronousIMServerStore {
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
        if let earlier = accepted[key] {
            let waiting = recipients(of: earlier, from: sender).filter { inboxes[$0]?.contains { $0.seq == earlier.seq } == true }
            return .stored(earlier, recipients: waiting, isNew: false)
        }
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

    public func abandon(_ ids: [String], from sender: String) -> Result<[IMAbandonOutcome], IMStoreFailure> {
        .success(
            ids.map { id in
                let key = sender + "\u{0}" + id
                if let earlier = accepted[key] { return IMAbandonOutcome(id: id, storedSeq: earlier.seq) }
                abandoned.insert(key)
                return IMAbandonOutcome(id: id, storedSeq: nil)
            })
    }

    public func undelivered(for user: String, after seq: UInt64, limit: Int) -> Result<[IMMessage], IMStoreFailure> {
        guard let inbox = inboxes[user], limit > 0 else { return .success([]) }
        // The inbox is in seq order: find the first entry past `seq` by bisection.
        var low = 0, high = inbox.count
        while low < high {
            let middle = (low + high) / 2
            if inbox[middle].seq <= seq { low = middle + 1 } else { high = middle }
        }
        return .success(Array(inbox[low..<(low + min(inbox.count - low, limit))]))
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
