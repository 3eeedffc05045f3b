import RunLoopIMCore
import RunLoopKit

/// Presence: who is online, announced once per loop pass.
extension IMServer {
    private static func presenceFrame(_ user: String, online: Bool) -> IMFrame {
        var notice = IMPresenceNotice()
        notice.user = user
        notice.online = online
        return IMFrame(command: .presence, serial: 0, message: notice)
    }

    /// Notes that `user` may have come online or gone offline; announced at the end of the pass.
    func presenceChanged(_ user: String) {
        presenceChanges.append(user)
        guard !isPresenceAnnouncementScheduled else { return }
        isPresenceAnnouncementScheduled = true
        // The loop's own thread by construction: every session callback runs there.
        try? loop.performFromLoopThread(inModes: modes, label: "im.server presence") { [weak self] in
            self?.announcePresence()
        }
    }

    /// Announces each user whose presence differs from what was last announced, once, however many
    /// times it changed in between. A session whose write fails here ends later in this pass or the
    /// next, and its own change is announced by the next announcement — never from inside this one.
    private func announcePresence() {
        isPresenceAnnouncementScheduled = false
        let changed = presenceChanges
        presenceChanges.removeAll()
        var notices: [(user: String, online: Bool, frame: IMFrame)] = []
        for user in changed {
            // Online with a session here, or anywhere in the cluster.
            let online = byUser[user] != nil || clusterOnline.contains(user)
            guard online != (announcedOnline[user] != nil) else { continue }
            let frame = Self.presenceFrame(user, online: online)
            announcedOnline[user] = online ? frame : nil
            notices.append((user, online, frame))
        }
        for notice in notices { onPresenceChange?(self, notice.user, notice.online) }
        guard settings.broadcastsPresence, !notices.isEmpty else { return }
        let frames = notices.map(\.frame)
        var position: [String: Int] = [:]
        for (index, notice) in notices.enumerated() { position[notice.user] = index }
        for (user, sessions) in byUser {
            // A user's own arrival is not news to their sessions.
            let theirs = position[user].map { Array(frames[..<$0] + frames[($0 + 1)...]) } ?? frames
            for session in sessions { session.write(theirs) }
        }
    }
}
