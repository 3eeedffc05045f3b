/// A node's own sessions per user — the truth Redis mirrors — and the decisions of keeping Redis in
/// step with it: one script in flight per user, the others waiting in order, and what to decide when
/// Redis cannot answer. Pure: the owner sends what it asks and reports the answers.
///
/// Every script sets the node's count for a user to an absolute value (never adds one), so a script
/// that ran although its answer was lost, or ran twice, leaves Redis right: the next one for that
/// user, or the next register, sets the value again.
///
/// When Redis is out of reach the node admits a session on its own count alone (availability over a
/// perfectly enforced limit: a login never waits for Redis longer than one command timeout), and
/// marks the user to be written once Redis answers again.
struct SessionTable<Token> {
    /// Whether scripts can go to Redis now.
    enum Remote: Equatable {
        /// The lease is held and the connection up.
        case up
        /// A register is awaited: what waits goes once it answered.
        case registering
        /// Out of reach, or the lease is not held: decide on the node's own count.
        case down
    }

    enum Action {
        case send(SessionSync)
        case answer(Token, SessionAdmission)
    }

    /// Sessions open on this node per user; users with none are absent.
    private(set) var counts: [String: Int] = [:]
    /// Users with a script in flight, opens waiting, or a count Redis may not have.
    private var pending: [String: PendingUser] = [:]

    private struct Open {
        let token: Token
        let limit: Int
    }

    private struct PendingUser {
        var sending: Sending?
        var waiting: [Open] = []
        /// Redis may hold another count for this user than ``counts``.
        var dirty = false
        /// A script for this user failed after it may have run: a presence change it made would
        /// never be announced, so the next one announces the user's state as it finds it.
        var unannounced = false
        var isSettled: Bool { sending == nil && waiting.isEmpty && !dirty && !unannounced }
    }

    private enum Sending {
        case count
        case open(Open)
    }

    /// Whether a user has a count Redis may not have (for tests and logs).
    func isDirty(_ user: String) -> Bool { pending[user]?.dirty ?? false }

    /// A session of `user` asks to open, at most `limit` per user across the cluster.
    mutating func open(_ user: String, limit: Int, token: Token, remote: Remote) -> [Action] {
        let count = counts[user, default: 0]
        if count >= limit { return [.answer(token, .refused(clusterTotal: count))] }
        let open = Open(token: token, limit: limit)
        if remote == .down, pending[user]?.sending == nil { return [decideLocally(user, open)] }
        pending[user, default: PendingUser()].waiting.append(open)
        return remote == .up ? next(user) : []
    }

    /// A session of `user` closed (a close with none open changes nothing).
    mutating func close(_ user: String, remote: Remote) -> [Action] {
        guard let count = counts[user] else { return [] }
        counts[user] = count > 1 ? count - 1 : nil
        pending[user, default: PendingUser()].dirty = true
        return remote == .up ? next(user) : []
    }

    /// Redis answered the script in flight for `user`.
    mutating func synced(_ user: String, _ outcome: SessionSyncOutcome, remote: Remote) -> [Action] {
        guard let sending = pending[user]?.sending else { return [] }
        pending[user]?.sending = nil
        var actions: [Action] = []
        if case .open(let open) = sending {
            switch outcome {
            case .applied(let total):
                counts[user, default: 0] += 1
                actions.append(.answer(open.token, .admitted(clusterTotal: total)))
            case .refused(let total):
                actions.append(.answer(open.token, .refused(clusterTotal: total)))
            }
        }
        return actions + carryOn(user, remote: remote)
    }

    /// The script in flight for `user` failed, timed out, or met a lost lease: it may have run or not,
    /// so the user's count is written again later; an open it carried is decided on this node's count.
    mutating func failed(_ user: String, remote: Remote) -> [Action] {
        guard let sending = pending[user]?.sending else { return [] }
        pending[user]?.sending = nil
        pending[user]?.dirty = true
        pending[user]?.unannounced = true
        var actions: [Action] = []
        if case .open(let open) = sending { actions.append(decideLocally(user, open)) }
        guard remote == .up else { return actions + carryOn(user, remote: remote) }
        // Only waiting logins go at once; a count alone waits for the next flush rather than pile up
        // on a Redis that is slow.
        return pending[user]?.waiting.isEmpty == false ? actions + next(user) : actions
    }

    /// Whether Redis can be reached changed, or the lease was refreshed: with Redis up, every user
    /// that waits or may be wrong in Redis is sent; with Redis down, waiting opens are decided here.
    mutating func flush(remote: Remote) -> [Action] {
        pending.keys.sorted().flatMap { carryOn($0, remote: remote) }
    }

    /// The counts a register puts in Redis, taken as it is sent: they settle every user but those
    /// with a script in flight, whose answer may change a count after this snapshot.
    mutating func registerSnapshot() -> [String: Int] {
        for user in pending.keys {
            if pending[user]?.sending == nil { pending[user]?.dirty = false } else { pending[user]?.dirty = true }
            if pending[user]?.isSettled == true { pending[user] = nil }
        }
        return counts
    }

    /// A register may have run without its answer, and with it the presence changes it made: every
    /// user counted here is announced by its next script.
    mutating func registerAnswerLost() {
        for user in counts.keys { pending[user, default: PendingUser()].unannounced = true }
    }

    private mutating func carryOn(_ user: String, remote: Remote) -> [Action] {
        switch remote {
        case .up: return next(user)
        case .registering:
            if pending[user]?.isSettled == true { pending[user] = nil }
            return []
        case .down:
            guard var entry = pending[user], entry.sending == nil else { return [] }
            let waiting = entry.waiting
            entry.waiting = []
            pending[user] = entry
            return waiting.map { decideLocally(user, $0) }
        }
    }

    private mutating func next(_ user: String) -> [Action] {
        var actions: [Action] = []
        while var entry = pending[user], entry.sending == nil {
            let count = counts[user, default: 0]
            if !entry.waiting.isEmpty {
                let open = entry.waiting.removeFirst()
                if count >= open.limit {
                    pending[user] = entry
                    actions.append(.answer(open.token, .refused(clusterTotal: count)))
                    continue
                }
                actions.append(.send(SessionSync(user: user, base: count, want: count + 1, limit: open.limit, announce: entry.unannounced)))
                entry.sending = .open(open)
                (entry.dirty, entry.unannounced) = (false, false)
                pending[user] = entry
            } else if entry.dirty || entry.unannounced {
                actions.append(.send(SessionSync(user: user, base: count, want: count, limit: nil, announce: entry.unannounced)))
                entry.sending = .count
                (entry.dirty, entry.unannounced) = (false, false)
                pending[user] = entry
            } else {
                pending[user] = nil
            }
        }
        return actions
    }

    private mutating func decideLocally(_ user: String, _ open: Open) -> Action {
        let count = counts[user, default: 0]
        guard count < open.limit else { return .answer(open.token, .refused(clusterTotal: count)) }
        counts[user] = count + 1
        pending[user, default: PendingUser()].dirty = true
        return .answer(open.token, .admitted(clusterTotal: nil))
    }
}

/// One user's count for Redis (the session script's arguments): set it to `want`, unless `limit` is
/// given and that would take the user's cluster-wide total past it — then set it to `base` and refuse.
/// With `announce`, the answer names the user online or offline as it is, changed or not.
struct SessionSync: Equatable {
    let user: String
    let base: Int
    let want: Int
    let limit: Int?
    let announce: Bool

    init(user: String, base: Int, want: Int, limit: Int?, announce: Bool = false) {
        self.user = user
        self.base = base
        self.want = want
        self.limit = limit
        self.announce = announce
    }
}

/// What Redis did with a ``SessionSync``.
enum SessionSyncOutcome: Equatable {
    /// It set `want`; the user's cluster-wide total is now `total`.
    case applied(total: Int)
    /// It set `base`: `want` would have passed the limit; the total is `total`.
    case refused(total: Int)
}
