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
    /// says the room is large and adds nobody). A failure fails all.
    public func contacts(ofEach users: [String], roomsOfAtMost maximumRoomMembers: Int) -> Result<[[String]], IMStatusCode> {
        // A conversation's members, or nil when it is large.
        var membersByConversation: [Int64: [String]?] = [:]
        var found: [[String]] = []
        found.reserveCapacity(users.count)
        let beyondLimit = Int64(clamping: maximumRoomMembers) &+ 1
        do {
            for user in users {
                var conversations: [Int64] = []
                try database.query(Self.conversationsOfUserSQL, [.text(user)]) { conversations.append($0.integer(0)) }
                var lists: [[String]] = []
                for conversation in conversations {
                    if membersByConversation[conversation] == nil {
                        var members: [String] = []
                        try database.query(Self.conversationMembersSQL, [.integer(conversation), .integer(beyondLimit)]) { row in
                            if let name = row.text(0) { members.append(name) }
                        }
                        let small: [String]? = members.count > maximumRoomMembers ? nil : members
                        membersByConversation[conversation] = .some(small)
                    }
                    if let members = membersByConversation[conversation] ?? nil { lists.append(members) }
                }
                found.append(SortedNames.union(lists, without: user))
            }
        } catch {
            logger.error("contacts of \(users.count) users not read: \(error)")
            return .failure(.internalError)
        }
        return .success(found)
    }

    /// The conversations a user is a member of: the primary key's prefix.
    static let conversationsOfUserSQL = "SELECT conversation_id FROM members WHERE user = ?1"

    /// A conversation's members in name order, at most ?2 of them: the members index's prefix.
    static let conversationMembersSQL = "SELECT user FROM members WHERE conversation_id = ?1 ORDER BY user LIMIT ?2"
}
