/// How many users an announcement settles together, their audiences asked in one question
/// (IMServer+Presence): as many as the pass's contact budget still holds at the audience size seen
/// so far in the pass — one user first, to see it. A room's leavers then cost the application one
/// read of what they share, and a pass still stops near its bound, however large the audiences.
enum PresenceBatch {
    /// - Parameters:
    ///   - usersLeft: users the pass may still settle (at least one).
    ///   - asked: users of the pass whose audience was asked (or was known) so far.
    ///   - told: those of them whose audience was answered and told.
    ///   - contacts: the contacts those audiences held (``IMServer/Settings/presenceAudiencePerPass``'s count).
    ///   - contactsLeft: what is left of that bound.
    static func size(usersLeft: Int, asked: Int, told: Int, contacts: Int, contactsLeft: Int) -> Int {
        let most = max(1, usersLeft)
        guard told > 0 else {
            // Nothing answered yet: before any question, one user shows what an audience costs (users
            // settled with no change asked nothing); after one, the answers come later (a store across
            // the network), and only the user bound holds.
            return asked == 0 ? 1 : most
        }
        let audience = max(1, contacts / told)
        return min(most, max(1, contactsLeft / audience))
    }
}
