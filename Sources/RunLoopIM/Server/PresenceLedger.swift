import RunLoopIMCore
import RunLoopKit

/// What the server announced of each user's presence, and who may have changed since: the decisions
/// behind IMServer+Presence, with no sessions or loop in them.
struct PresenceLedger {
    /// The users announced online. Their PRESENCE frames are encoded when a snapshot or an
    /// announcement needs them, not kept: a kept frame cost each user online ~100 bytes for good, an
    /// encoding costs a snapshot page ~1 µs a frame.
    private(set) var announced: Set<String> = []
    /// Users noted and not settled yet, in the order they were first noted since their last
    /// announcement: those from ``nextNoted`` on (the ones before were settled by an announcement
    /// that took only part of them).
    private var noted: [String] = []
    private var nextNoted = 0
    private var notedSet: Set<String> = []

    /// Notes that `user` may have come online or gone offline. Returns whether no note was waiting
    /// before it: then an announcement must be scheduled (while notes wait, one is).
    mutating func note(_ user: String) -> Bool {
        let isFirst = notedSet.isEmpty
        if notedSet.insert(user).inserted { noted.append(user) }
        return isFirst
    }

    /// Whether `user` was noted and not settled yet: an announcement to come settles them.
    func isNoted(_ user: String) -> Bool { notedSet.contains(user) }

    /// Whether users noted wait for an announcement: after one that settled at most its limit.
    var hasNoted: Bool { !notedSet.isEmpty }

    /// How many users noted wait for an announcement: the most the next ``settle(limit:isOnline:)`` takes.
    var waiting: Int { notedSet.count }

    /// The announcement: of the first `limit` users noted and not settled yet, each whose state now
    /// (`isOnline`) differs from the one last announced, however many times it changed in between,
    /// in the order noted. They count as announced from here on; the others wait for the next
    /// announcement (``hasNoted``).
    mutating func settle(limit: Int = .max, isOnline: (String) -> Bool) -> [(user: String, online: Bool)] {
        let end = nextNoted + min(max(1, limit), noted.count - nextNoted)
        var changes: [(user: String, online: Bool)] = []
        for user in noted[nextNoted..<end] {
            notedSet.remove(user)
            let online = isOnline(user)
            guard online != announced.contains(user) else { continue }
            if online { announced.insert(user) } else { announced.remove(user) }
            changes.append((user, online))
        }
        if end == noted.count {
            // Not keeping the room of a crowd's notes once they are all settled.
            noted = []
            notedSet = []
            nextNoted = 0
        } else {
            nextNoted = end
        }
        announced.shrinkIfSparse()
        return changes
    }

    /// The frame that states `user`'s presence as last announced.
    func frame(of user: String) -> IMFrame { Self.frame(user, online: announced.contains(user)) }

    /// The first page of a snapshot of `audience` for `user` (at most `limit` users online), and where
    /// the rest of it starts, if there is a rest. Everyone as the audience (a server without an
    /// application) gets the first page only: the whole of everyone online would make each login
    /// cost what everyone online does. The page is names, not frames: each session's writer encodes
    /// them as it reads them (``IMServerSession/writePresence(online:)``).
    func snapshot(of audience: IMPresenceAudience, for user: String, limit: Int) -> (users: [String], rest: (members: [String], next: Int)?) {
        switch audience {
        case .everyone: return (Array(announced.lazy.filter { $0 != user }.prefix(limit)), nil)
        case .users(let users):
            let first = page(of: users, from: 0, for: user, limit: limit)
            return (first.users, first.next.map { (users, $0) })
        }
    }

    /// One page of a snapshot for `user`: the users of `members` from `start` on who are announced
    /// online (not `user`), at most `limit` of them, and where the next page starts (`nil`: this was
    /// the last). Pages read the ledger when they are made, so a later page never contradicts an
    /// announcement made since.
    func page(of members: [String], from start: Int, for user: String, limit: Int) -> (users: [String], next: Int?) {
        let most = max(1, limit)
        var online: [String] = []
        // Room for the page at once (a temporary array), not a regrowth at every doubling.
        online.reserveCapacity(min(most, max(0, members.count - start)))
        var index = start
        while index < members.count, online.count < most {
            if members[index] != user, announced.contains(members[index]) { online.append(members[index]) }
            index += 1
        }
        return (online, index < members.count ? index : nil)
    }

    static func frame(_ user: String, online: Bool) -> IMFrame { .presence(of: user, online: online) }
}

/// The frames one announcement owes the sessions, written when the announcement is done. Frames for
/// everyone are kept once, not once per session.
///
/// A login's announcement is one user's frame for a thousand sessions: each is told with an append
/// to one flat list, and the flush writes the list in the order told. A session told of several
/// users still gets them in one write: a server's link gathers the frames of a loop pass and writes
/// them once at its end (``LinkWriteBatch``), so the outbox keeps no table of what each session is
/// owed while it is told. The flush groups by session (by slot, not by hash look-up): sessions that
/// read PRESENCE_BATCH get what they were told in one frame (``IMServerSession/writePresence(_:told:)``),
/// which saves their clients far more than the grouping costs — a frame read and decoded per notice.
struct PresenceOutbox {
    /// The users' frames of this announcement, each once.
    private var frames: [IMFrame] = []
    /// Each session told, with its frame's place in ``frames``, in the order told.
    private var told: [(session: IMServerSession, frame: Int)] = []
    private var forEveryone: [IMFrame] = []
    /// Where each user's own frame is in ``forEveryone``: their sessions are not told of themselves.
    private var position: [String: Int] = [:]

    /// The most notices an announcement cut at its bound (``IMServer/Settings/presenceAudiencePerPass``)
    /// holds for its next passes before it writes them: five passes' worth at the chat node's bound,
    /// about 800 KiB of entries — a room of 1,000 leaving together would otherwise hold a million.
    static let mostNoticesHeld = 50_000

    /// The notices held: a frame for a session each (or one for everyone).
    var notices: Int { told.count + forEveryone.count }

    /// `frame` for each session of `users` in `sessionsByUser` but those of `user` (whose presence it
    /// states).
    mutating func add(_ frame: IMFrame, forSessionsOf users: [String], but user: String, in sessionsByUser: [String: UserSessions]) {
        let index = frames.count
        let before = told.count
        // An append per recipient and nothing else: the sessions are told apart once, at the flush.
        for contact in users where contact != user {
            guard let sessions = sessionsByUser[contact] else { continue }
            for session in sessions { told.append((session, index)) }
        }
        if told.count > before { frames.append(frame) }
    }

    /// `user`'s frame for every logged-in session but the user's own.
    mutating func addForEveryone(_ frame: IMFrame, of user: String) {
        position[user] = forEveryone.count
        forEveryone.append(frame)
    }

    /// Writes what each session of `sessionsByUser` is owed: each session's frames in the order told.
    /// Returns how many sessions were written to (a session told several frames counts once: the
    /// link writes them together).
    @discardableResult
    func flush(to sessionsByUser: [String: UserSessions]) -> Int {
        if forEveryone.isEmpty { return writeTold() }
        var owed: [ObjectIdentifier: [IMFrame]] = [:]
        var sessions: [IMServerSession] = []
        for (session, index) in told {
            let id = ObjectIdentifier(session)
            if owed[id] == nil { sessions.append(session) }
            owed[id, default: []].append(frames[index])
        }
        var written: Set<ObjectIdentifier> = []
        if !forEveryone.isEmpty {
            for (user, userSessions) in sessionsByUser {
                let theirs = position[user].map { Array(forEveryone[..<$0] + forEveryone[($0 + 1)...]) } ?? forEveryone
                for session in userSessions {
                    let id = ObjectIdentifier(session)
                    written.insert(id)
                    session.writePresence((owed[id] ?? []) + theirs)
                }
            }
        }
        var alsoWritten = 0
        for session in sessions where !written.contains(ObjectIdentifier(session)) {
            session.writePresence(owed[ObjectIdentifier(session)] ?? [])
            alsoWritten += 1
        }
        return written.count + alsoWritten
    }

    /// Writes ``told``: each session's frames in the order told (``IMServerSession/writePresence(_:told:)``:
    /// one at a time to sessions that read single PRESENCE frames, a lone notice as its frame, the
    /// others in batches), grouped here, at the flush, so that telling stays an append per
    /// recipient. Returns how many sessions were written to, each once (what ``PresenceCadence``
    /// paces by).
    ///
    /// The grouping is a counting sort over slots: a session's slot (in the order first told) is
    /// found through a table indexed by its place among the server's open sessions
    /// (``IMServerSession/placeInOpen``, a small integer), not by a hash look-up per notice. Places
    /// are read before anything is written, as a write that ends a session moves another into its
    /// place. A session ended since it was told (no place) is passed over: nothing reaches it.
    private func writeTold() -> Int {
        // Each entry's session's place (-1: none), read once: a class's field is an access check each time.
        var slotOfEntry: [Int32] = []
        slotOfEntry.reserveCapacity(told.count)
        var highest: Int32 = -1
        for entry in told {
            let place = entry.session.placeInOpen
            let known = place == PlacedArray<IMServer.OpenPlace>.notPlaced ? -1 : Int32(place)
            slotOfEntry.append(known)
            highest = max(highest, known)
        }
        guard highest >= 0 else { return 0 }
        var slotOfPlace = [Int32](repeating: -1, count: Int(highest) + 1)
        var sessions: [IMServerSession] = []
        // Each slot's notices, then (summed) where its part of `order` ends.
        var ends: [Int32] = []
        for entry in told.indices {
            let place = Int(slotOfEntry[entry])
            guard place >= 0 else { continue }
            var slot = slotOfPlace[place]
            if slot < 0 {
                slot = Int32(sessions.count)
                slotOfPlace[place] = slot
                sessions.append(told[entry].session)
                ends.append(0)
            }
            ends[Int(slot)] += 1
            slotOfEntry[entry] = slot
        }
        var total: Int32 = 0
        for slot in ends.indices {
            total += ends[slot]
            ends[slot] = total
        }
        // Filled from the back, so that each session's frames keep the order told.
        var order = [Int32](repeating: 0, count: Int(total))
        var next = ends
        for entry in told.indices.reversed() {
            let slot = Int(slotOfEntry[entry])
            guard slot >= 0 else { continue }
            next[slot] -= 1
            order[Int(next[slot])] = Int32(told[entry].frame)
        }
        var start = 0
        for (slot, session) in sessions.enumerated() {
            let end = Int(ends[slot])
            session.writePresence(frames, told: order[start..<end])
            start = end
        }
        return sessions.count
    }
}
