import RunLoopIMCore

/// The presence snapshots still being sent, a page per session per loop pass: a session whose user
/// has thousands of contacts online gets every one of them, and no pass writes more than one page
/// to any session, so a crowd logging in at once never stalls the loop with snapshots. The decisions
/// behind IMServer+Presence's snapshots, with no loop in them; `Recipient` is the session.
struct PresenceSnapshots<Recipient: AnyObject> {
    private struct Snapshot {
        weak var recipient: Recipient?
        let user: String
        let members: [String]
        var next: Int
    }

    /// In the order they started; a recipient has at most one.
    private var owed: [Snapshot] = []

    var isEmpty: Bool { owed.isEmpty }

    /// `recipient`, a session of `user`, got a snapshot's first page: the rest, from `next` on in
    /// `members` (`nil`: there is no rest), is owed. It replaces what the recipient was still
    /// getting: its audience changed, and the new snapshot covers it. Returns whether a pass must be
    /// scheduled for the pages: something is owed now and nothing was before.
    mutating func owe(_ recipient: Recipient, of user: String, members: [String], from next: Int?) -> Bool {
        let wasEmpty = owed.isEmpty
        owed.removeAll { $0.recipient === recipient || $0.recipient == nil }
        if let next { owed.append(Snapshot(recipient: recipient, user: user, members: members, next: next)) }
        return wasEmpty && !owed.isEmpty
    }

    /// The next page of each snapshot (`page` makes one from the members, the first index and the
    /// user), in the order the snapshots started; finished snapshots and those of recipients gone
    /// are dropped. Returns the pages to write, and whether more remain for another pass.
    mutating func nextPages(
        _ page: (_ members: [String], _ from: Int, _ user: String) -> (users: [String], next: Int?)
    ) -> (pages: [(recipient: Recipient, users: [String])], more: Bool) {
        var pages: [(recipient: Recipient, users: [String])] = []
        var remaining: [Snapshot] = []
        for var snapshot in owed {
            guard let recipient = snapshot.recipient else { continue }
            let made = page(snapshot.members, snapshot.next, snapshot.user)
            if !made.users.isEmpty { pages.append((recipient, made.users)) }
            guard let next = made.next else { continue }
            snapshot.next = next
            remaining.append(snapshot)
        }
        // A fresh array, not the old one's capacity: after a crowd, nothing is kept for it.
        owed = remaining
        return (pages, !owed.isEmpty)
    }
}
