import RunLoopRedis

/// What the register script answered (``PresenceScript/register``).
struct RegisterAnswer: Equatable {
    let epoch: UInt64
    let online: [String]
    let offline: [String]

    /// `nil` when the reply has another shape.
    init?(_ reply: RedisReply) {
        guard let parts = reply.array, parts.count == 3, let epoch = parts[0].integer, epoch > 0,
            let online = users(parts[1]), let offline = users(parts[2])
        else { return nil }
        self.epoch = UInt64(epoch)
        self.online = online
        self.offline = offline
    }
}

/// What the session script answered (``PresenceScript/session``).
enum SessionAnswer: Equatable {
    /// The lease no longer holds the epoch the script was sent under: nothing was written.
    case fenced
    /// The count was written; `online` or `offline` holds the user when its total crossed zero.
    case synced(SessionSyncOutcome, online: [String], offline: [String])

    /// `nil` when the reply has another shape.
    init?(_ reply: RedisReply) {
        guard let parts = reply.array, let verdict = parts.first?.integer else { return nil }
        if verdict == -1, parts.count == 1 {
            self = .fenced
            return
        }
        guard parts.count == 4, let total = parts[1].integer, let online = users(parts[2]), let offline = users(parts[3]) else { return nil }
        switch verdict {
        case 1: self = .synced(.applied(total: Int(total)), online: online, offline: offline)
        case 0: self = .synced(.refused(total: Int(total)), online: online, offline: offline)
        default: return nil
        }
    }
}

/// What the retire script answered (``PresenceScript/retire``).
struct RetireAnswer: Equatable {
    /// Whether the node was removed by this run (not already gone, not come back).
    let retired: Bool
    /// The users whose cluster-wide total reached zero with it.
    let offline: [String]

    /// `nil` when the reply has another shape.
    init?(_ reply: RedisReply) {
        guard let parts = reply.array, parts.count == 2, let retired = parts[0].integer, let offline = users(parts[1]) else { return nil }
        self.retired = retired == 1
        self.offline = offline
    }
}

/// The user names of an array reply; `nil` if any is not a UTF-8 string.
private func users(_ reply: RedisReply) -> [String]? {
    guard let elements = reply.array else { return nil }
    let names = elements.compactMap(\.string)
    return names.count == elements.count ? names : nil
}
