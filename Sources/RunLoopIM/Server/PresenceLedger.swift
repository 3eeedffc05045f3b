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

    /// The first page of a snapshot of `audience` for `user` (at most `limit` frames), and where the
    /// rest of it starts, if there is a rest. Everyone as the audience (a server without an
    /// application) gets the first page only: the whole of everyone online would make each login
    /// cost what everyone online does.
    func snapshot(of audience: IMPresenceAudience, for user: String, limit: Int) -> (frames: [IMFrame], rest: (members: [String], next: Int)?) {
        switch audience {
        case .everyone: return (announced.lazy.filter { $0 != user }.prefix(limit).map { Self.frame($0, online: true) }, nil)
        case .users(let users):
            let first = page(of: users, from: 0, for: user, limit: limit)
            return (first.frames, first.next.map { (users, $0) })
        }
    }

    /// One page of a snapshot for `user`: the users of `members` from `start` on who are announced
    /// online (not `user`), at most `limit` frames, and where the next page starts (`nil`: this was
    /// the last). Pages read the ledger when they are made, so a later page never contradicts an
    /// announcement made since.
    func page(of members: [String], from start: Int, for user: String, limit: Int) -> (frames: [IMFrame], next: Int?) {
        var frames: [IMFrame] = []
        var index = start
        while index < members.count, frames.count < max(1, limit) {
            if members[index] != user, announced.contains(members[index]) { frames.append(Self.frame(members[index], online: true)) }
            index += 1
        }
        return (frames, index < members.count ? index : nil)
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
/// owed while it is told. The flush groups by session only for announcements to everyone (a server
/// without an application) and for sessions that read PRESENCE_BATCH: those get what they were told
/// in one frame (``IMServerSession/writePresence(_:)``), which saves their clients far more than the
/// grouping costs — a frame read and decoded per notice.
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

    /// `frame` for each of `sessions`.
    mutating func add(_ frame: IMFrame, for sessions: some Sequence<IMServerSession>) {
        let index = frames.count
        let before = told.count
        // An append per recipient and nothing else: the sessions are told apart once, at the flush.
        for session in sessions { told.append((session, index)) }
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

    /// Writes ``told`` in its order: a frame a session as told to sessions that read single
    /// PRESENCE frames, and all a session was told in one batch to the others — grouped here, at
    /// the flush, so that telling stays an append per recipient. A session owed one notice gets its
    /// shared single frame: a batch of one would cost the node an array and a copy, and the client
    /// the same read. Returns how many sessions were written to, each once (what ``PresenceCadence``
    /// paces by): the look-up that groups a session's notices counts them too, so telling keeps no
    /// set of the sessions told.
    private func writeTold() -> Int {
        var places: [ObjectIdentifier: Int] = [:]
        var owed: [(session: IMServerSession, first: Int, more: [Int])] = []
        // One place per session: a session that reads single frames is written at once, in the
        // order told, and its place only counts it.
        let single = -1
        for (session, index) in told {
            let id = ObjectIdentifier(session)
            guard session.machine.sendsPresenceBatches else {
                if places[id] == nil { places[id] = single }
                session.write(frames[index])
                continue
            }
            if let place = places[id] {
                owed[place].more.append(index)
            } else {
                places[id] = owed.count
                owed.append((session, index, []))
            }
        }
        for (session, first, more) in owed {
            if more.isEmpty {
                session.write(frames[first])
            } else {
                session.writePresence([frames[first]] + more.map { frames[$0] })
            }
        }
        return places.count
    }
}
