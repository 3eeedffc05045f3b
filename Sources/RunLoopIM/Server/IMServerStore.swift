public import RunLoopIMCore

/// What the server decided about a login.
public enum IMLoginVerdict: Equatable, Sendable {
    /// Logged in as the user named in the LOGIN.
    case accepted
    /// Logged in as `user`, the account's canonical name for the one in the LOGIN (a deployment
    /// whose names ignore case answers `Alice` with the account `alice`): the session's user, in
    /// LOGIN_ACK, presence and every limit.
    case acceptedAs(user: String)
    /// Logged in as `user`, an account this login made (LOGIN_ACK says `account_created`).
    case created(user: String)
    /// Refused (`authenticationFailed`, LOGIN_ACK says `account_unknown`): no account has this name,
    /// the login asked for an existing one (``IMLoginAttempt/existingAccountOnly``), and one without
    /// that flag would make it. Counts as a failed login for the login limits.
    case accountUnknown
    case refused(IMStatusCode, reason: String)
}

/// What storing a sent message gave.
public enum IMStoreResult: Equatable, Sendable {
    /// Stored (or stored before, for a resend: `isNew` false) as `message` — with `seq`, `from` and
    /// `sentAtMilliseconds` filled in — for `recipients` (the sender excluded): all of them for a new
    /// message, those who have not acknowledged it yet for a resend.
    case stored(IMMessage, recipients: [String], isNew: Bool)
    /// Not stored, and never will be under this id (unknown recipient, abandoned id, …).
    case refused(IMStatusCode)
}

/// Where an ``IMServer`` keeps accounts, messages and each user's undelivered inbox.
///
/// Asynchronous: the server calls it on its loop's thread only, and each call completes **exactly
/// once, on that thread** — at once, before returning (memory, SQLite: ``SynchronousIMServerStore``),
/// or on a later pass (a database across the network, after its commit or failure). An
/// implementation never blocks the loop.
///
/// Messages live in conversations (``IMConversation``): each stored message gets a store-wide `seq`
/// and its place in its conversation, ``IMMessage/conversationSeq`` (1, 2, 3, … with no gap, in commit
/// order). A user's inbox is, per conversation they are a member of, the messages past their cursor
/// that others sent; acknowledging one message acknowledges every earlier one of its conversation.
///
/// The delivery guarantees rest on five rules an implementation keeps:
/// 1. ``store(_:from:nowMilliseconds:completion:)`` is idempotent per (sender, id): a resend gets the
///    first `seq`. It completes with `.stored` only once the message is committed; a store that cannot
///    tell (a lost connection) completes `.refused(.internalError)`, which the client takes as "send it
///    again" — safe by this rule even when the first commit landed after all.
/// 2. An id the sender abandoned before it was stored is refused forever after.
/// 3. A stored message stays in each recipient's inbox until that recipient acknowledges it or a
///    later message of its conversation.
/// 4. ``undelivered(for:after:limit:completion:)`` returns each conversation in conversationSeq order.
/// 5. A failure is never an answer: a read that failed completes with ``IMStoreFailure``, not with
///    an empty inbox.
/// Persist them (``InMemoryIMStore`` does not survive a restart; the chat node's SQLite store does).
///
/// Rooms and history are the chat application's: `RunLoopChat`'s `ChatStore` adds them to this.
public protocol IMServerStore: AnyObject {
    /// Checks credentials (unless the server's ``IMServer/authenticator`` does).
    func authenticate(_ login: IMLoginAttempt, completion: @escaping (IMLoginVerdict) -> Void)
    /// Stores a message from `sender` (its `from`, `seq` and `sentAtMilliseconds` are the store's to
    /// fill in). The server writes SEND_ACK from `completion`, so only after the commit.
    func store(_ message: IMMessage, from sender: String, nowMilliseconds: UInt64, completion: @escaping (IMStoreResult) -> Void)
    /// Settles ids the sender gave up on: stored ones with their seq, the others refused from now on.
    func abandon(_ ids: [String], from sender: String, completion: @escaping (Result<[IMAbandonOutcome], IMStoreFailure>) -> Void)
    /// At most `limit` undelivered messages of `user` — others' messages past the user's cursor in each
    /// conversation they are a member of — a conversation at a time and in conversationSeq order
    /// within each, skipping in each conversation named in `after` what is at or below its number
    /// (what the session sent already): one window of the inbox, read in O(`limit` + the user's
    /// conversations), never O(backlog).
    func undelivered(
        for user: String, after: [IMConversation: UInt64], limit: Int, completion: @escaping (Result<[IMMessage], IMStoreFailure>) -> Void)
    /// `user` has the messages of these `seq`s: in each one's conversation their cursor moves up to it
    /// (cumulative; never back). No answer: a lost acknowledgement only means the messages come again,
    /// and the client drops what it has shown.
    func acknowledge(_ seqs: [UInt64], for user: String)
    /// Several users' acknowledgements at once, as ``acknowledge(_:for:)`` for each: what the server
    /// gathered over one loop pass. A store that commits each call makes one transaction of them all.
    /// The default makes one ``acknowledge(_:for:)`` call per user.
    func acknowledge(_ seqsByUser: [String: [UInt64]])
}

extension IMServerStore {
    public func acknowledge(_ seqsByUser: [String: [UInt64]]) {
        for (user, seqs) in seqsByUser { acknowledge(seqs, for: user) }
    }
}

/// An ``IMServerStore`` whose answers are ready at once (memory, SQLite): it answers each call as a
/// plain function, and its completions run before the call returns. Tests and tools read it directly.
public protocol SynchronousIMServerStore: IMServerStore {
    /// ``IMServerStore/authenticate(_:completion:)``'s verdict, at once.
    func authenticate(_ login: IMLoginAttempt) -> IMLoginVerdict
    /// ``IMServerStore/store(_:from:nowMilliseconds:completion:)``'s result, committed before it returns.
    func store(_ message: IMMessage, from sender: String, nowMilliseconds: UInt64) -> IMStoreResult
    /// ``IMServerStore/abandon(_:from:completion:)``'s outcomes, at once.
    func abandon(_ ids: [String], from sender: String) -> Result<[IMAbandonOutcome], IMStoreFailure>
    /// ``IMServerStore/undelivered(for:after:limit:completion:)``'s window, at once.
    func undelivered(for user: String, after: [IMConversation: UInt64], limit: Int) -> Result<[IMMessage], IMStoreFailure>
}

extension SynchronousIMServerStore {
    public func authenticate(_ login: IMLoginAttempt, completion: @escaping (IMLoginVerdict) -> Void) {
        completion(authenticate(login))
    }

    public func store(_ message: IMMessage, from sender: String, nowMilliseconds: UInt64, completion: @escaping (IMStoreResult) -> Void) {
        completion(store(message, from: sender, nowMilliseconds: nowMilliseconds))
    }

    public func abandon(_ ids: [String], from sender: String, completion: @escaping (Result<[IMAbandonOutcome], IMStoreFailure>) -> Void) {
        completion(abandon(ids, from: sender))
    }

    public func undelivered(
        for user: String, after: [IMConversation: UInt64], limit: Int, completion: @escaping (Result<[IMMessage], IMStoreFailure>) -> Void
    ) {
        completion(undelivered(for: user, after: after, limit: limit))
    }

    /// The whole inbox of `user`, a conversation at a time (tests and tools: a server reads it a
    /// window at a time).
    public func undelivered(for user: String) throws(IMStoreFailure) -> [IMMessage] {
        try undelivered(for: user, after: [:], limit: .max).get()
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
