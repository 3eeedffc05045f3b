import Logging
import RunLoopChat
public import RunLoopIMCore

extension SQLiteIMStore {
    /// The users who share a conversation with `user` (rooms of at most `maximumRoomMembers`), each
    /// once, in name order: ``contacts(ofEach:roomsOfAtMost:)``'s index reads for one user. A login's
    /// audience in a room of 1,000 was one join with DISTINCT and ORDER BY, which sorted the room's
    /// names in a temporary B-tree each time: two fifths of the node's work per presence notice beside
    /// scrypt, where the members index already holds them in order.
    public func contacts(of user: String, roomsOfAtMost maximumRoomMembers: Int) -> Result<[String], IMStatusCode> {
        contacts(ofEach: [user], roomsOfAtMost: maximumRoomMembers).map { $0[0] }
    }

    /// ``contacts(of:roomsOfAtMost:)`` of each of `users`, in their order, with each conversation's
    /// members read once however many of the users share it: a room's crowd leaving together is one
    /// read of the room, not one join of it per member (which was most of the node's time while a
    /// room of 1,000 left). Per user, one read of their memberships (the primary key); per
    /// conversation, its members in name order, at most `maximumRoomMembers` + 1 of them (one more
    /// says the room is large and adds nobody) — or what the last read found, while nothing was
    /// written to the database since (``ConversationMembers``). A failure fails all.
    public func contacts(ofEach users: [String], roomsOfAtMost maximumRoomMembers: Int) -> Result<[[String]], IMStatusCode> {
        var found: [[String]] = []
        found.reserveCapacity(users.count)
        let beyondLimit = Int64(clamping: maximumRoomMembers) &+ 1
        do {
            let stamp = try database.changeStamp()
            conversationMembers.keep(ifStill: stamp, roomsOfAtMost: maximumRoomMembers)
            for user in users {
                var conversations: [Int64] = []
                try database.query(Self.conversationsOfUserSQL, [.text(user)]) { conversations.append($0.integer(0)) }
                var lists: [[String]] = []
                for conversation in conversations {
                    let small: [String]?
                    if let known = conversationMembers.members(of: conversation) {
                        small = known
                    } else {
                        var members: [String] = []
                        try database.query(Self.conversationMembersSQL, [.integer(conversation), .integer(beyondLimit)]) { row in
                            if let name = row.text(0) { members.append(name) }
                        }
                        small = members.count > maximumRoomMembers ? nil : members
                        conversationMembers.read(small, of: conversation)
                    }
                    if let small { lists.append(small) }
                }
                found.append(SortedNames.union(lists, without: user))
            }
        } catch {
            logger.error("contacts of \(users.count) users not read: \(error)")
            return .failure(.internalError)
        }
        return .success(found)
    }

    /// Frees what the store holds for its reads: the members it read, and SQLite's unused pages
    /// (``SQLiteDatabase/releaseMemory()``). The next reads read again. Loop thread only.
    public func releaseMemory() {
        conversationMembers = ConversationMembers()
        database.releaseMemory()
    }

    /// The conversations a user is a member of: the primary key's prefix.
    static let conversationsOfUserSQL = "SELECT conversation_id FROM members WHERE user = ?1"

    /// A conversation's members in name order, at most ?2 of them: the members index's prefix.
    static let conversationMembersSQL = "SELECT user FROM members WHERE conversation_id = ?1 ORDER BY user LIMIT ?2"
}

/// Conversations' members as the store last read them (``SQLiteIMStore/contacts(ofEach:roomsOfAtMost:)``),
/// kept while the database is unchanged: a login in a room of 1,000 read its 1,000 names — a row and a
/// `String` each — to learn what the login before it had read. Exact by construction: the cache is
/// dropped whole when anything was written since it was filled (``SQLiteDatabase/ChangeStamp``: any
/// row through this connection — a JOIN, a LEAVE, a first direct message, a deleted account, but also
/// any message or acknowledgement — or any commit of another process), so it only serves reads
/// between writes, such as a crowd's logins. At most ``mostNames`` names; cleared when full.
struct ConversationMembers {
    /// The most names kept: 100 rooms of 1,000, about 2 MiB.
    static let mostNames = 100_000

    private var stamp: SQLiteDatabase.ChangeStamp?
    private var maximumRoomMembers = 0
    /// A conversation's members in name order, or `nil` for a room over the limit.
    private var byConversation: [Int64: [String]?] = [:]
    private var names = 0

    /// Keeps what was read only if the database is as it was then (`stamp`) and it was read with
    /// the same limit: otherwise starts empty from here.
    mutating func keep(ifStill stamp: SQLiteDatabase.ChangeStamp, roomsOfAtMost maximumRoomMembers: Int) {
        guard stamp != self.stamp || maximumRoomMembers != self.maximumRoomMembers else { return }
        self = ConversationMembers()
        self.stamp = stamp
        self.maximumRoomMembers = maximumRoomMembers
    }

    /// What was read of `conversation`: `.some(nil)` for a large room, `nil` when it was not read.
    func members(of conversation: Int64) -> [String]?? { byConversation[conversation] }

    /// `conversation`'s members as just read (`nil`: a large room).
    mutating func read(_ members: [String]?, of conversation: Int64) {
        let count = members?.count ?? 0
        if names + count > Self.mostNames {
            byConversation = [:]
            names = 0
        }
        byConversation[conversation] = .some(members)
        names += count
    }
}
