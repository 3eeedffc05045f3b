import RunLoopKit

/// Users whose last session was on a node that stopped gracefully: presumed on their way to another
/// node, they are announced offline only if not back within the grace. A pure value: the node feeds
/// it and arms a timer at ``nextDeadline``.
struct PresenceGrace {
    let grace: Duration
    /// Users away now, with when their grace ends.
    private var due: [String: LoopInstant] = [:]
    /// The same, in the order they went away (the grace is one length, so also in deadline order);
    /// entries for users back or away again since are skipped.
    private var queue: [(user: String, at: LoopInstant)] = []
    private var head = 0

    init(grace: Duration) { self.grace = grace }

    /// `user`'s node stopped with their last session.
    mutating func away(_ user: String, now: LoopInstant) {
        let at = now + grace
        due[user] = at
        queue.append((user, at))
    }

    /// `user` came online somewhere: their grace no longer runs.
    mutating func back(_ user: String) { due[user] = nil }

    /// The users whose grace has ended by `now`: announce them offline.
    mutating func expired(now: LoopInstant) -> [String] {
        var users: [String] = []
        while head < queue.count, queue[head].at <= now {
            let entry = queue[head]
            head += 1
            if due[entry.user] == entry.at {
                due[entry.user] = nil
                users.append(entry.user)
            }
        }
        if head > 1024, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        return users
    }

    /// When the next grace ends, if any runs.
    var nextDeadline: LoopInstant? {
        queue[head...].first { due[$0.user] == $0.at }?.at
    }
}
