public import RunLoopIM
public import RunLoopIMCore

/// An ``IMServerStore`` that also keeps the chat's rooms and reads conversation history: what
/// ``ChatService`` answers JOIN, LEAVE, LIST_ROOMS and HISTORY from. The IM layer needs only room
/// membership, to address a room's messages, and knows it through ``IMServerStore/store(_:from:nowMilliseconds:completion:)``.
///
/// Asynchronous like the IM store: called on the server loop's thread only, each call completes
/// exactly once on that thread, at once or later; a store that failed completes with
/// ``IMStatusCode/internalError``. `InMemoryIMStore` and `RunLoopIMSQLite`'s `SQLiteIMStore` complete
/// at once (``SynchronousChatStore``).
public protocol ChatStore: IMServerStore {
    /// Puts `user` in `room`, creating it, from the room's latest message on (older ones are history,
    /// not deliveries); joining twice is not an error. A user already in
    /// `maximumRooms` rooms (when set) may not join another: ``IMStatusCode/tooManyRooms``; a name
    /// that is not a valid ``RoomName``: ``IMStatusCode/badRequest``. The change gets the room's next
    /// membership number (``MembershipCommit``) in the same transaction; a new member keeps it as
    /// their ``RoomMember/joinedSeq``, one already in the room keeps theirs.
    func join(room: String, user: String, maximumRooms: Int?, completion: @escaping (Result<MembershipCommit, IMStatusCode>) -> Void)
    /// Takes `user` out of `room` (``IMStatusCode/notAMember`` if they were not in it), the change
    /// numbered as a join is.
    func leave(room: String, user: String, completion: @escaping (Result<MembershipCommit, IMStatusCode>) -> Void)
    /// At most `limit` rooms whose names sort after `after` in UTF-8 byte order ("" : from the first),
    /// in that order, as `user` sees them.
    func rooms(for user: String, after: String, limit: Int, completion: @escaping (Result<[Room], IMStatusCode>) -> Void)
    /// A page of `user`'s conversation with a user or in a room they are a member of
    /// (``IMStatusCode/notAMember`` otherwise), newest first: at most `limit` messages with `seq`
    /// below the query's `before` (0: from the newest).
    func history(_ query: HistoryQuery, for user: String, limit: Int, completion: @escaping (Result<HistoryPage, IMStatusCode>) -> Void)
    /// The users who share a conversation with `user` — a room both are members of that has at most
    /// `maximumRoomMembers` members, or a direct conversation (one stored message between the two,
    /// either way) — each once, `user` not among them: who sees `user`'s presence (``ChatService``'s
    /// answer to the server). A larger room adds nobody, and telling it from a small one must read at
    /// most `maximumRoomMembers` + 1 of its members, so the answer costs what the user's small rooms
    /// hold, however big the large ones grow.
    func contacts(of user: String, roomsOfAtMost maximumRoomMembers: Int, completion: @escaping (Result<[String], IMStatusCode>) -> Void)
    /// ``contacts(of:roomsOfAtMost:completion:)`` of each of `users`, in their order: the audiences of
    /// a batch of presence changes (a room's crowd leaving together), which a store may read in one
    /// go — each shared conversation's members once, one round trip to a database — instead of once
    /// per user. A failure fails all. Default: each user's read, all asked before any answer is
    /// awaited; the answers together once the last has come.
    func contacts(
        ofEach users: [String], roomsOfAtMost maximumRoomMembers: Int, completion: @escaping (Result<[[String]], IMStatusCode>) -> Void)
    /// The members of `room`, each once with the number of their join (none for a room that does not
    /// exist): who is told of a join or leave, and the room's count, in one read.
    func members(ofRoom room: String, completion: @escaping (Result<[RoomMember], IMStatusCode>) -> Void)
}

extension ChatStore {
    public func contacts(
        ofEach users: [String], roomsOfAtMost maximumRoomMembers: Int, completion: @escaping (Result<[[String]], IMStatusCode>) -> Void
    ) {
        guard !users.isEmpty else { return completion(.success([])) }
        var found = [[String]](repeating: [], count: users.count)
        var failure: IMStatusCode?
        var waiting = users.count
        for (index, user) in users.enumerated() {
            contacts(of: user, roomsOfAtMost: maximumRoomMembers) { result in
                switch result {
                case .success(let contacts): found[index] = contacts
                case .failure(let code): failure = failure ?? code
                }
                waiting -= 1
                guard waiting == 0 else { return }
                completion(failure.map { .failure($0) } ?? .success(found))
            }
        }
    }
}

/// A ``ChatStore`` whose answers are ready at once (memory, SQLite): plain functions, bridged to the
/// completions, which then run before each call returns. Tests and tools call them directly.
public protocol SynchronousChatStore: ChatStore, SynchronousIMServerStore {
    /// ``ChatStore/join(room:user:maximumRooms:completion:)``'s answer, at once.
    func join(room: String, user: String, maximumRooms: Int?) -> Result<MembershipCommit, IMStatusCode>
    /// ``ChatStore/leave(room:user:completion:)``'s answer, at once.
    func leave(room: String, user: String) -> Result<MembershipCommit, IMStatusCode>
    /// ``ChatStore/rooms(for:after:limit:completion:)``'s page, at once.
    func rooms(for user: String, after: String, limit: Int) -> Result<[Room], IMStatusCode>
    /// ``ChatStore/history(_:for:limit:completion:)``'s page, at once.
    func history(_ query: HistoryQuery, for user: String, limit: Int) -> Result<HistoryPage, IMStatusCode>
    /// ``ChatStore/contacts(of:roomsOfAtMost:completion:)``'s users, at once.
    func contacts(of user: String, roomsOfAtMost maximumRoomMembers: Int) -> Result<[String], IMStatusCode>
    /// ``ChatStore/members(ofRoom:completion:)``'s users, at once.
    func members(ofRoom room: String) -> Result<[RoomMember], IMStatusCode>
    /// ``contacts(of:roomsOfAtMost:)`` of each of `users`, in their order, at once: what several of
    /// them share (the room a crowd leaves together) may be read once for all. A failure fails all.
    /// Default: each user's read in turn.
    func contacts(ofEach users: [String], roomsOfAtMost maximumRoomMembers: Int) -> Result<[[String]], IMStatusCode>
}

extension SynchronousChatStore {
    public func join(room: String, user: String, maximumRooms: Int?, completion: @escaping (Result<MembershipCommit, IMStatusCode>) -> Void) {
        completion(join(room: room, user: user, maximumRooms: maximumRooms))
    }

    public func leave(room: String, user: String, completion: @escaping (Result<MembershipCommit, IMStatusCode>) -> Void) {
        completion(leave(room: room, user: user))
    }

    public func rooms(for user: String, after: String, limit: Int, completion: @escaping (Result<[Room], IMStatusCode>) -> Void) {
        completion(rooms(for: user, after: after, limit: limit))
    }

    public func history(
        _ query: HistoryQuery, for user: String, limit: Int, completion: @escaping (Result<HistoryPage, IMStatusCode>) -> Void
    ) {
        completion(history(query, for: user, limit: limit))
    }

    public func contacts(of user: String, roomsOfAtMost maximumRoomMembers: Int, completion: @escaping (Result<[String], IMStatusCode>) -> Void) {
        completion(contacts(of: user, roomsOfAtMost: maximumRoomMembers))
    }

    public func members(ofRoom room: String, completion: @escaping (Result<[RoomMember], IMStatusCode>) -> Void) {
        completion(members(ofRoom: room))
    }

    public func contacts(
        ofEach users: [String], roomsOfAtMost maximumRoomMembers: Int, completion: @escaping (Result<[[String]], IMStatusCode>) -> Void
    ) {
        completion(contacts(ofEach: users, roomsOfAtMost: maximumRoomMembers))
    }

    public func contacts(ofEach users: [String], roomsOfAtMost maximumRoomMembers: Int) -> Result<[[String]], IMStatusCode> {
        var found: [[String]] = []
        found.reserveCapacity(users.count)
        for user in users {
            switch contacts(of: user, roomsOfAtMost: maximumRoomMembers) {
            case .success(let contacts): found.append(contacts)
            case .failure(let failure): return .failure(failure)
            }
        }
        return .success(found)
    }

    /// Every room, as `user` sees it (tests and tools: a server answers LIST_ROOMS a page at a time).
    public func rooms(for user: String) -> Result<[Room], IMStatusCode> { rooms(for: user, after: "", limit: .max) }

    /// Joins with no cap on rooms per user.
    public func join(room: String, user: String) -> Result<MembershipCommit, IMStatusCode> {
        join(room: room, user: user, maximumRooms: nil)
    }
}

/// Orders room names as pages of LIST_ROOMS do: by their UTF-8 bytes (SQLite's BINARY collation).
package func roomNameOrder(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }
