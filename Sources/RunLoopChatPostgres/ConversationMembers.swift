import RunLoopChat
import RunLoopPostgres

/// The members of several conversations as one read returned them (rows of conversation id and
/// member, each conversation's rows together, in member order): each user's contacts are the
/// conversations listing them, merged, the user left out.
struct ConversationMembers {
    /// Each conversation's members, in name order.
    private var lists: [[String]] = []
    /// The conversations (indexes into `lists`) each asked user is in.
    private var conversationsOf: [String: [Int]]

    /// The conversations of `rows`, with those of each of `users` noted.
    init(rows: PostgresRows, of users: [String]) {
        conversationsOf = Dictionary(users.map { ($0, []) }, uniquingKeysWith: { first, _ in first })
        var current: String?
        for row in 0..<rows.count {
            guard let conversation = rows[row, 0], let member = rows[row, 1] else { continue }
            if conversation != current {
                current = conversation
                lists.append([])
            }
            lists[lists.count - 1].append(member)
            conversationsOf[member]?.append(lists.count - 1)
        }
    }

    /// The contacts of each of `users` (those it was made for), in their order: everyone they share
    /// a conversation with.
    func contacts(ofEach users: [String]) -> [[String]] {
        users.map { user in SortedNames.union((conversationsOf[user] ?? []).map { lists[$0] }, without: user) }
    }
}
