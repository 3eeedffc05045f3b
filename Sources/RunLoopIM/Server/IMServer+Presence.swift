public import RunLoopIMCore
import RunLoopKit

/// Presence: who is online, announced once per loop pass (or per ``IMServer/Settings/presenceInterval``)
/// to each user's audience — the sessions of
/// the users the ``IMServer/applicationHandler`` names (``IMApplicationHandler/presenceAudience(of:on:completion:)``),
/// so a change or a login costs what the user's contacts cost, not what everyone online does.
extension IMServer {
    /// Notes that `user` may have come online or gone offline; announced at the end of the pass.
    func presenceChanged(_ user: String) {
        guard presence.note(user) else { return }
        scheduleAnnouncement()
    }

    /// The rest of an announcement cut at its limit, on the loop's next pass: a timer due at once
    /// fires once a pass, after the loop read its ports, where a block queued from a block could run
    /// in the same pass (blocks run up to three times a pass, RunLoop+Run).
    private func scheduleNextBatch() {
        let timer = RunLoopTimer(after: .zero, label: "im.server presence, continued") { [weak self] _ in
            self?.announcePresence()
        }
        for mode in modes { loop.add(timer, forMode: mode) }
    }

    private func scheduleAnnouncement() {
        if let at = presenceCadence.announcement(now: loop.now, pace: settings.presencePace) {
            let timer = RunLoopTimer(after: at - loop.now, label: "im.server presence, next interval") { [weak self] _ in
                self?.announcePresence()
            }
            for mode in modes { loop.add(timer, forMode: mode) }
            return
        }
        // The loop's own thread by construction: every session callback runs there.
        try? loop.performFromLoopThread(inModes: modes, label: "im.server presence") { [weak self] in
            self?.announcePresence()
        }
    }

    /// Announces each user whose presence differs from what was last announced, once, however many
    /// times it changed in between. A session whose write fails here ends later in this pass or the
    /// next, and its own change is announced by the next announcement — never from inside this one.
    /// A server shutting down tells its clients nothing: they are told `shuttingDown`, and their
    /// users are not gone, only moving (docs/PROTOCOL.md §8).
    ///
    /// At most ``IMServer/Settings/presenceChangesPerPass`` users are settled at once, and no more once
    /// their audiences reach ``IMServer/Settings/presenceAudiencePerPass`` contacts; the others in the
    /// next pass, and so on: thousands of sessions closed together (a network blip) would otherwise
    /// make one pass of thousands of audience reads and millions of notices, during which nobody else
    /// is served.
    private func announcePresence() {
        // Read since the last announcement only: a later one asks again.
        let known = audiencesOfThisPass
        audiencesOfThisPass = [:]
        let telling = settings.broadcastsPresence && !isShuttingDown
        // Audiences answered at once (the memory and SQLite stores) share one write per session —
        // with what the announcement's earlier passes owe, when it is the continuation of one cut at
        // its bound.
        if !telling {
            presenceOutbox = nil
        } else if presenceOutbox == nil {
            presenceOutbox = PresenceOutbox()
        }
        presenceAudienceOfThisPass = 0
        var settled = 0
        var asked = 0
        var told = 0
        let isOnline = { (user: String) in self.byUser[user] != nil || self.clusterOnline.contains(user) }
        // A batch at a time, each batch's audiences asked together (a room's leavers share one read
        // of its members), so the pass stops at whichever bound comes first: the users, or their
        // audiences' size (a thousand users leaving a room of a thousand together would be a
        // thousand reads of a thousand contacts, and up to a million notices, in one pass).
        while settled < settings.presenceChangesPerPass, presenceAudienceOfThisPass < settings.presenceAudiencePerPass,
            presence.hasNoted
        {
            let batch = PresenceBatch.size(
                usersLeft: min(settings.presenceChangesPerPass - settled, presence.waiting), asked: asked, told: told,
                contacts: presenceAudienceOfThisPass, contactsLeft: settings.presenceAudiencePerPass - presenceAudienceOfThisPass)
            settled += batch
            var asking: [String] = []
            for change in presence.settle(limit: batch, isOnline: isOnline) {
                presenceCadence.announced(at: loop.now)
                onPresenceChange?(self, change.user, change.online)
                guard telling else { continue }
                asked += 1
                if let audience = known[change.user] {
                    tell(presenceOf: change.user, to: audience)
                    told += 1
                } else {
                    asking.append(change.user)
                }
            }
            guard !asking.isEmpty else { continue }
            askAudiences(of: asking) { [weak self] audiences in
                for (user, audience) in zip(asking, audiences) { self?.tell(presenceOf: user, to: audience) }
                told += asking.count
            }
        }
        if presence.hasNoted {
            scheduleNextBatch()
            // The rest of the announcement comes in the next passes, and what this pass owes each
            // session waits for it: a second's arrivals in rooms of 1,000 are past the pass's bound,
            // and written pass by pass each contact would get a write per pass again, not one per
            // announcement. A crowd's departure is written every few passes, not held whole.
            if let outbox = presenceOutbox, outbox.notices < PresenceOutbox.mostNoticesHeld { return }
        }
        let outbox = presenceOutbox
        presenceOutbox = nil
        if let written = outbox?.flush(to: byUser) { presenceCadence.wrote(written) }
    }

    /// A new session of `user` (or the sessions of a user whose audience changed): who of their
    /// audience is online now, so they need not wait for changes. The first page (at most
    /// ``Settings/presenceSnapshotPage`` PRESENCE notices, in one PRESENCE_BATCH for a session that reads
    /// them) goes at once, the others one a pass after
    /// it (with everyone as the audience, the first page only). Users online but not yet announced
    /// (this pass) come with the announcement.
    func sendPresenceSnapshot(to sessions: [IMServerSession], of user: String) {
        guard settings.broadcastsPresence, !sessions.isEmpty else { return }
        askAudience(of: user) { [weak self] audience in
            guard let self else { return }
            // A login's user is announced at the end of this pass to the same audience: one read of
            // the user's contacts (thousands of names in a big room) serves both. An answer that
            // comes after the announcement is not kept: the next one asks again.
            if self.presence.isNoted(user) { self.audiencesOfThisPass[user] = audience }
            let first = self.presence.snapshot(of: audience, for: user, limit: self.settings.presenceSnapshotPage)
            for session in sessions {
                session.writePresence(online: first.users)
                let owed = self.snapshots.owe(session, of: user, members: first.rest?.members ?? [], from: first.rest?.next)
                if owed { self.scheduleSnapshotPages() }
            }
        }
    }

    private func scheduleSnapshotPages() {
        // The loop's own thread by construction, as for the announcement.
        try? loop.performFromLoopThread(inModes: modes, label: "im.server presence snapshots") { [weak self] in
            self?.sendSnapshotPages()
        }
    }

    /// The next page of every snapshot still owed; another pass follows while any is. A server
    /// shutting down sends no more of them.
    private func sendSnapshotPages() {
        guard !isShuttingDown else { return snapshots = PresenceSnapshots() }
        let limit = settings.presenceSnapshotPage
        let (pages, more) = snapshots.nextPages { self.presence.page(of: $0, from: $1, for: $2, limit: limit) }
        for (session, users) in pages { session.writePresence(online: users) }
        if more { scheduleSnapshotPages() }
    }

    /// The application changed whom `user` shares a conversation with (a JOIN, here or on another
    /// node): `user`'s sessions here get a new snapshot, and `user`, when online, is announced to
    /// their audience again (a state: those who knew already are told again). Loop thread only.
    public func presenceAudienceChanged(for user: String) {
        // A JOIN changes the audience of the room's other members too: none read before it is kept.
        audiencesOfThisPass = [:]
        sendPresenceSnapshot(to: Array(byUser[user] ?? []), of: user)
        guard settings.broadcastsPresence, presence.announced.contains(user) else { return }
        askAudience(of: user) { [weak self] audience in self?.tell(presenceOf: user, to: audience) }
    }

    /// A message this server stored: the first of a direct conversation makes its two users each
    /// other's audience (docs/PROTOCOL.md §8), so each learns the other's presence now, not at their
    /// next change. A cluster passes on the same for another node's message.
    public func conversationMayHaveStarted(_ message: IMMessage) {
        guard message.conversationSeq == 1, case .user = message.recipient else { return }
        // The sender's snapshot brings the recipient's presence; the announcement, the sender's.
        presenceAudienceChanged(for: message.from)
    }

    /// Who is told of `user`: the application's answer, or everyone when there is no application.
    private func askAudience(of user: String, _ then: @escaping (IMPresenceAudience) -> Void) {
        guard let applicationHandler else { return then(.everyone) }
        callStore(timed: .audience, { applicationHandler.presenceAudience(of: user, on: self, completion: $0) }, then: then)
    }

    /// The audiences of `users`, in their order: the application's answer, or everyone for each.
    private func askAudiences(of users: [String], _ then: @escaping ([IMPresenceAudience]) -> Void) {
        guard let applicationHandler else { return then(users.map { _ in .everyone }) }
        callStore(timed: .audience, { applicationHandler.presenceAudiences(of: users, on: self, completion: $0) }, then: then)
    }

    /// Writes `user`'s presence as last announced — not as it was when the audience was asked: an
    /// answer that comes late must not undo a later change — to the audience's sessions here.
    private func tell(presenceOf user: String, to audience: IMPresenceAudience) {
        guard !isShuttingDown else { return }
        let frame = presence.frame(of: user)
        switch audience {
        case .everyone where presenceOutbox != nil:
            presenceOutbox?.addForEveryone(frame, of: user)
            // One shared list for every session, written once per session whatever its length.
            presenceAudienceOfThisPass += 1
        case .everyone:
            var written = 0
            for (other, sessions) in byUser where other != user {
                for session in sessions { session.write(frame) }
                written += sessions.count
            }
            presenceCadence.wrote(written)
            presenceAudienceOfThisPass += byUser.count
        case .users(let users):
            // Every contact costs its look-up (and was read from the store), online or not.
            presenceAudienceOfThisPass += users.count
            if presenceOutbox != nil {
                // The table passed once, not read through `self` (an exclusivity check) per contact.
                presenceOutbox?.add(frame, forSessionsOf: users, but: user, in: byUser)
            } else {
                let sessionsByUser = byUser
                let sessions = users.lazy.filter { $0 != user }.flatMap { sessionsByUser[$0] ?? [] }
                // An audience answered after its announcement (a store across the network): its
                // writes count towards the pace all the same.
                var written = 0
                for session in sessions {
                    session.write(frame)
                    written += 1
                }
                presenceCadence.wrote(written)
            }
        }
    }
}

extension IMServer.Settings {
    /// How often presence may be announced (``presenceInterval``, ``presenceWritesPerSecond``).
    var presencePace: PresenceCadence.Pace {
        PresenceCadence.Pace(interval: presenceInterval, writesPerSecond: presenceWritesPerSecond, longestInterval: longestPresenceInterval)
    }
}
