import RunLoopKit
import RunLoopNet

/// The login and keepalive deadlines of an ``IMServer``'s sessions in one set of modes, on one loop
/// timer. A timer per session (a `RunLoopTimer`, its closures, a place in the loop's heap) was most of
/// what an idle connection cost beyond its socket, and it was re-dated on every frame read.
///
/// A queue of (deadline, session) — a heap with a FIFO lane beside it (``Queue``) — lazy both ways: a
/// deadline moved later — every heartbeat — costs a store (its entry comes due early and is put back at
/// the session's deadline then, which the lane takes in O(1)); one moved earlier pushes a new entry and
/// leaves the old one to be dropped when it surfaces. A session's live entry is the one whose order is
/// its ``Slot/queuedOrder``.
///
/// Entries name their session by its place in a table of unowned references, not by a reference of
/// their own: the heap moves entries on every push and pop, where a place is a plain integer. A
/// session holds its place while it has a live entry; a freed place goes to the next session, and its
/// old stale entries never match the newcomer's order. The table holds its sessions unretained:
/// a weak reference would give every session a side table (48 bytes, and a cache line touched on each
/// heartbeat), and a session gives its place back before it goes — when it ends, or in its `deinit`
/// should its server let it go first.
///
/// The timer wakes only on tick boundaries (``tickNanoseconds``): with thousands of sessions some entry comes due every
/// millisecond or two (each heartbeat's moved deadline resurfaces once), and a wake-up each would cost
/// more than the deadlines are worth; one wake-up handles every entry due in its slice instead. A
/// session is therefore told between its deadline and 250 ms after it (docs/PROTOCOL.md, section 6).
///
/// Loop thread only, owned by its server; sessions are not kept alive by it.
final class SessionDeadlines {
    /// What a session keeps of its deadline (inline in the session: no object of its own).
    struct Slot {
        /// The deadline the session's machine asked for; `nil`: none.
        fileprivate(set) var wanted: LoopInstant? {
            get { wantedInstant.value }
            set { wantedInstant.value = newValue }
        }
        /// The instant of the session's live entry; `nil`: it has none.
        fileprivate var queued: LoopInstant? {
            get { queuedInstant.value }
            set { queuedInstant.value = newValue }
        }
        // Every session keeps a slot: 8 bytes each where `LoopInstant?` takes 16 (issue 22).
        private var wantedInstant = OptionalInstant()
        private var queuedInstant = OptionalInstant()
        /// The order of the live entry, which tells it from the stale ones of this place.
        fileprivate var queuedOrder: UInt32 = 0
        /// The session's place in ``SessionDeadlines/places`` while it has a live entry.
        fileprivate var place: UInt32 = 0
    }

    /// Unretained, as an `Unmanaged` rather than an `unowned(unsafe)` optional: a struct holding an
    /// optional `unowned` or `unowned(unsafe)` reference was copied wrongly by the standard library's
    /// unspecialized code in a debug build (`places.enumerated()` in `dropStaleEntriesIfMost` looped
    /// past the table or trapped "Not enough bits" on its index, MassDisconnectTests), which a weak
    /// reference did not show.
    private struct Place {
        /// Set only while the session holds the place, which it gives back before its deinit ends.
        var held: Unmanaged<IMServerSession>?

        var session: IMServerSession? { held?.takeUnretainedValue() }
    }

    /// How far past its deadline a session may be told, in nanoseconds (250 ms): the timer's instants
    /// are rounded up to a multiple of this on the loop's clock.
    static let tickNanoseconds: UInt64 = 250_000_000

    /// The first tick boundary at or after `instant`: when the timer wakes for an entry due then.
    static func wakeUp(for instant: LoopInstant) -> LoopInstant {
        let past = instant.nanoseconds % tickNanoseconds
        return past == 0 ? instant : instant + .nanoseconds(Int64(tickNanoseconds - past))
    }

    // Unchecked exclusivity: each access of these in `fire`'s loop paid a runtime check, some 820
    // instructions a heartbeat (IM-RESULTS, "dlane"). Loop thread only, and no access of one overlaps
    // another of the same (the queue's `keep` closure reads `places`, never `queue`).
    private let loop: RunLoop
    @exclusivity(unchecked) private var queue: Queue
    /// Sessions with a live entry in the queue (``Slot/queued`` set), each at its place; the queue's
    /// other entries are stale.
    @exclusivity(unchecked) private var places: [Place] = []
    /// Places no session holds.
    @exclusivity(unchecked) private var freePlaces: [UInt32] = []
    private var liveEntries: Int { places.count - freePlaces.count }
    @exclusivity(unchecked) private var nextOrder: UInt32 = 0
    private var timer: DeadlineTimer!

    /// `usesLane` false (only in tests, which compare the order with the heap alone) keeps every entry
    /// in the heap.
    init(loop: RunLoop, modes: [RunLoop.Mode], usesLane: Bool = true) {
        self.loop = loop
        queue = Queue(usesLane: usesLane)
        timer = DeadlineTimer(loop: loop, modes: modes, label: "im.session deadlines") { [weak self] in self?.fire() }
    }

    deinit { timer.cancel() }

    /// Sessions with an entry, live or stale (for tests).
    var entryCount: Int { queue.count }
    /// Entries in the queue's lane, the rest being in its heap (for tests).
    var laneCount: Int { queue.laneCount }
    /// How many entries the queue has room for (for tests).
    var capacity: Int { queue.capacity }
    /// Places in the table, held or free (for tests).
    var placeCount: Int { places.count }
    /// Places a session holds (for tests).
    var heldPlaceCount: Int { liveEntries }
    /// Bytes an entry takes in the queue (for tests).
    static var entryStride: Int { MemoryLayout<Entry>.stride }

    /// Calls `session.deadlinePassed()` once `instant` has passed, replacing the deadline asked for
    /// before; `nil` asks for none. Asking for the same instant again changes nothing (a deadline
    /// that passed and is asked for again does not fire again).
    func schedule(_ session: IMServerSession, at instant: LoopInstant?) {
        guard instant != session.deadline.wanted else { return }
        session.deadline.wanted = instant
        guard let instant else {
            // Its entry is stale from now on (an ended session's): dropped with the others once they
            // are most of the queue, not when each surfaces up to 1.5 keepalives later — until then
            // each held a place, and a crowd's left the queue scattered.
            if session.deadline.queued != nil {
                release(session)
                dropStaleEntriesIfMost()
            }
            return
        }
        if let queued = session.deadline.queued, queued <= instant { return }
        push(session, at: instant)
        armForFirstEntry()
    }

    /// `session` is going (its deinit, its server having let it go without ending it): the place it
    /// holds, if any, is given back, so the table never names freed memory.
    func forget(_ session: IMServerSession) {
        session.deadline.wanted = nil
        if session.deadline.queued != nil { release(session) }
    }

    private func push(_ session: IMServerSession, at instant: LoopInstant) {
        if session.deadline.queued == nil { session.deadline.place = takePlace(for: session) }
        session.deadline.queued = instant
        session.deadline.queuedOrder = nextOrder
        queue.insert(Entry(at: instant, order: nextOrder, place: session.deadline.place))
        nextOrder &+= 1
    }

    private func takePlace(for session: IMServerSession) -> UInt32 {
        if let free = freePlaces.popLast() {
            places[Int(free)].held = .passUnretained(session)
            return free
        }
        places.append(Place(held: .passUnretained(session)))
        return UInt32(places.count - 1)
    }

    /// The session's live entry is gone (taken, or stale from now on): its place is free.
    private func release(_ session: IMServerSession) {
        session.deadline.queued = nil
        places[Int(session.deadline.place)].held = nil
        freePlaces.append(session.deadline.place)
    }

    /// The session whose live entry `entry` is, or `nil` for a stale one.
    private func liveSession(of entry: Entry) -> IMServerSession? {
        guard let session = places[Int(entry.place)].session, session.deadline.queued != nil,
            session.deadline.queuedOrder == entry.order
        else { return nil }
        return session
    }

    /// Takes every entry due now first, then tells their sessions: a session that asks again for an
    /// instant already past is told on the timer's next pass, not in this one.
    private func fire() {
        let now = loop.now
        var due: [IMServerSession] = []
        while let first = queue.removeFirst(dueBy: now) {
            guard let session = liveSession(of: first) else { continue }
            if let wanted = session.deadline.wanted, wanted > now {
                // Put back at its deadline, in the place it holds.
                push(session, at: wanted)
                continue
            }
            release(session)
            if session.deadline.wanted != nil { due.append(session) }
        }
        for session in due where session.deadline.wanted.map({ $0 <= now }) == true {
            session.deadlinePassed()
        }
        dropStaleEntriesIfMost()
        armForFirstEntry()
    }

    /// Gives back the room a crowd left (19,000 sessions, then gone): the queue's storage never
    /// shrinks by itself. Rebuilt with the live entries only once they fill at most a quarter of its
    /// room, so a rebuild follows three quarters of them going stale or leaving: O(1) per entry, spread
    /// out.
    private func dropStaleEntriesIfMost() {
        let capacity = queue.capacity
        guard capacity > 64, liveEntries * 4 < capacity else { return }
        queue.keep { liveSession(of: $0) != nil }
        // Sessions released without asking for no deadline held places: free now, as no entry names
        // them any more. The table's room goes with the crowd too.
        var held = Set<UInt32>()
        queue.forEach { held.insert($0.place) }
        var kept: [Place] = []
        kept.reserveCapacity(places.count)
        freePlaces = []
        for (index, place) in places.enumerated() {
            if held.contains(UInt32(index)) {
                kept.append(place)
            } else {
                kept.append(Place())
                freePlaces.append(UInt32(index))
            }
        }
        places = kept
        while let last = freePlaces.last, Int(last) == places.count - 1 {
            freePlaces.removeLast()
            places.removeLast()
        }
        freePlaces.reverse()
    }

    private func armForFirstEntry() {
        if let first = queue.first { timer.arm(at: Self.wakeUp(for: first.at)) } else { timer.disarm() }
    }
}

extension IMServer {
    /// The deadlines of the server's sessions in `modes`, made on first use.
    func sessionDeadlines(for modes: [RunLoop.Mode]) -> SessionDeadlines {
        if let existing = deadlinesByModes[modes] { return existing }
        let made = SessionDeadlines(loop: loop, modes: modes)
        deadlinesByModes[modes] = made
        return made
    }
}
