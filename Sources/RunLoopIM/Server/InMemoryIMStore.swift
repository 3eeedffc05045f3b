public import RunLoopIMCore

/// An ``IMServerStore`` in memory: for tests, samples and benchmarks. Everything is lost with the
/// process, so across a server restart only the clients' own resends and de-duplication hold.
///
/// The same shape as the SQLite and PostgreSQL stores: each conversation keeps its messages in
/// conversationSeq order and one cursor per member; a room message is stored once, not once per member.
public final class InMemoryIMStore: SynchronousIMServerStore {
    /// One conversation: its messages (the one numbered n at index n − 1) and its members' cursors.
    struct Conversation {
        /// Creation order: the order a read visits a user's conversations in.
        let order: Int
        var messages: [IMMessage] = []
        /// Member → the highest conversationSeq they acknowledged.
        var ackedThrough: [String: UInt64] = [:]
        /// The number of the last join or leave (RunLoopChat's membership order), and each member's
        /// join's.
        var membershipSeq: UInt64 = 0
        var joinedSeq: [String: UInt64] = [:]

        var lastSeq: UInt64 { UInt64(messages.count) }
    }

    /// Accounts and passwords; with `nil`, any user name logs in with any password.
    public var accounts: [String: String]?
    private(set) var conversations: [IMConversation: Conversation] = [:]
    /// The conversations each user is a member of.
    private var memberships: [String: Set<IMConversation>] = [:]
    private var accepted: [String: IMMessage] = [:]
    private var abandoned: Set<String> = []
    private var known: Set<String> = []
    /// Every stored message in seq order (the one of seq n at index n − 1), for acknowledgements and
    /// history (RunLoopChat's `ChatStore` conformance).
    package private(set) var log: [IMMessage] = []

    public init(accounts: [String: String]? = nil) {
        self.accounts = accounts
        known = Set(accounts?.keys.map { $0 } ?? [])
    }

    /// Every message stored so far (for tests and samples).
    public var storedCount: Int { log.count }

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
            let cursors = conversations[earlier.conversation]?.ackedThrough ?? [:]
            let waiting = cursors.filter { $0.key != sender && $0.value < earlier.conversationSeq }.keys.sorted()
            return .stored(earlier, recipients: waiting, isNew: false)
        }
        if abandoned.contains(key) { return .refused(.badRequest) }
        guard !message.id.isEmpty else { return .refused(.badRequest) }
        if case .user(let name) = message.recipient, accounts != nil, !known.contains(name) { return .refused(.unknownRecipient) }
        if case .room(let name) = message.recipient, !isMember(sender, of: .room(name)) { return .refused(.unknownRecipient) }
        var stored = message
        stored.from = sender
        stored.seq = UInt64(log.count + 1)
        stored.sentAtMilliseconds = nowMilliseconds
        let place = stored.conversation
        var conversation = conversations[place] ?? Conversation(order: conversations.count)
        stored.conversationSeq = conversation.lastSeq + 1
        conversation.messages.append(stored)
        conversations[place] = conversation
        if case .user(let name) = stored.recipient {
            // A direct conversation's members come with its first message, from its start.
            for member in [sender, name] where conversations[place]?.ackedThrough[member] == nil { addMember(member, to: place, ackedThrough: 0) }
        }
        // A sender caught up with the conversation stays caught up: their own message is no backlog.
        if conversations[place]?.ackedThrough[sender] == stored.conversationSeq - 1 {
            conversations[place]?.ackedThrough[sender] = stored.conversationSeq
        }
        accepted[key] = stored
        log.append(stored)
        let recipients = (conversations[place]?.ackedThrough.keys.filter { $0 != sender } ?? []).sorted()
        return .stored(stored, recipients: recipients, isNew: true)
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

    public func undelivered(for user: String, after: [IMConversation: UInt64], limit: Int) -> Result<[IMMessage], IMStoreFailure> {
        var found: [IMMessage] = []
        guard limit > 0 else { return .success(found) }
        let places = (memberships[user] ?? []).compactMap { place in conversations[place].map { (place, $0) } }
        for (place, conversation) in places.sorted(by: { $0.1.order < $1.1.order }) {
            let from = max(conversation.ackedThrough[user] ?? 0, after[place] ?? 0)
            for message in conversation.messages.dropFirst(Int(clamping: from)) where message.from != user {
                found.append(message)
                if found.count == limit { return .success(found) }
            }
        }
        return .success(found)
    }

    public func acknowledge(_ seqs: [UInt64], for user: String) {
        for seq in seqs where seq >= 1 && seq <= UInt64(log.count) {
            let message = log[Int(seq - 1)]
            guard let acked = conversations[message.conversation]?.ackedThrough[user], acked < message.conversationSeq else { continue }
            conversations[message.conversation]?.ackedThrough[user] = message.conversationSeq
        }
    }

    // MARK: Members (rooms: RunLoopChat's conformance)

    /// Whether `user` is a member of `place`.
    package func isMember(_ user: String, of place: IMConversation) -> Bool {
        conversations[place]?.ackedThrough[user] != nil
    }

    /// Makes `user` a member of `place` (created if new) from the message after `ackedThrough`, as of
    /// membership change `joinedSeq`; a member already keeps their cursor and their join's number.
    package func addMember(_ user: String, to place: IMConversation, ackedThrough: UInt64, joinedSeq: UInt64 = 0) {
        if conversations[place] == nil { conversations[place] = Conversation(order: conversations.count) }
        guard conversations[place]?.ackedThrough[user] == nil else { return }
        conversations[place]?.ackedThrough[user] = ackedThrough
        conversations[place]?.joinedSeq[user] = joinedSeq
        memberships[user, default: []].insert(place)
    }

    /// Takes `user` out of `place`; whether they were in it.
    package func removeMember(_ user: String, from place: IMConversation) -> Bool {
        guard conversations[place]?.ackedThrough.removeValue(forKey: user) != nil else { return false }
        conversations[place]?.joinedSeq[user] = nil
        memberships[user]?.remove(place)
        return true
    }

    /// Numbers a join or leave of `place` (created if new): the next of its membership order.
    package func nextMembershipSeq(of place: IMConversation) -> UInt64 {
        if conversations[place] == nil { conversations[place] = Conversation(order: conversations.count) }
        conversations[place]?.membershipSeq += 1
        return conversations[place]?.membershipSeq ?? 0
    }

    /// The number of the join that made `user` a member of `place` (nil: not a member).
    package func joinedSeq(of user: String, in place: IMConversation) -> UInt64? { conversations[place]?.joinedSeq[user] }

    /// The members of `place`, and the conversations `user` is a member of.
    package func members(of place: IMConversation) -> Int { conversations[place]?.ackedThrough.count ?? 0 }
    package func conversations(of user: String) -> Set<IMConversation> { memberships[user] ?? [] }
    /// The names of the members of `place`.
    package func memberNames(of place: IMConversation) -> [String] { conversations[place].map { Array($0.ackedThrough.keys) } ?? [] }

    /// The messages of `place` in conversationSeq (and seq) order.
    package func messages(of place: IMConversation) -> [IMMessage] { conversations[place]?.messages ?? [] }

    /// Every conversation there is.
    package var allConversations: [IMConversation] { Array(conversations.keys) }
}
