import RunLoopKit
import RunLoopNet

/// The login and keepalive deadlines of an ``IMServer``'s sessions in one set of modes, on one loop
/// timer. A timer per session (a `RunLoopTimer`, its closures, a place in the loop's heap) was most of
/// what an idle connection cost beyond its socket, and it was re-dated on every frame read.
///
/// A min-heap of (deadline, session), lazy both ways: a deadline moved later — every heartbeat —
/// costs a store (its entry comes due early and is put back at the session's deadline then); one moved
/// earlier pushes a new entry and leaves the old one to be dropped when it surfaces. A session's live
/// entry is the one at its ``Slot/queued`` instant.
///
/// Loop thread only, owned by its server; sessions are held weakly.
final class SessionDeadlines {
    /// What a session keeps of its deadline (inline in the session: no object of its own).
    struct Slot {
        /// The deadline the session's machine asked for; `nil`: none.
        fileprivate(set) var wanted: LoopInstant?
        /// The instant of the session's live heap entry; `nil`: it has none.
        fileprivate var queued: LoopInstant?
    }

    private struct Entry {
        let at: LoopInstant
        /// Ties fire in the order they were queued.
        let order: UInt64
        weak var session: IMServerSession?

        func precedes(_ other: Entry) -> Bool { at < other.at || (at == other.at && order < other.order) }
    }

    private let loop: RunLoop
    private var heap: [Entry] = []
    private var nextOrder: UInt64 = 0
    private var timer: DeadlineTimer!

    init(loop: RunLoop, modes: [RunLoop.Mode]) {
        self.loop = loop
        timer = DeadlineTimer(loop: loop, modes: modes, label: "im.session deadlines") { [weak self] in self?.fire() }
    }

    deinit { timer.cancel() }

    /// Sessions with an entry, live or stale (for tests).
    var entryCount: Int { heap.count }

    /// Calls `session.deadlinePassed()` once `instant` has passed, replacing the deadline asked for
    /// before; `nil` asks for none. Asking for the same instant again changes nothing (a deadline
    /// that passed and is asked for again does not fire again).
    func schedule(_ session: IMServerSession, at instant: LoopInstant?) {
        guard instant != session.deadline.wanted else { return }
        session.deadline.wanted = instant
        guard let instant else { return }
        if let queued = session.deadline.queued, queued <= instant { return }
        push(session, at: instant)
        timer.arm(at: heap[0].at)
    }

    private func push(_ session: IMServerSession, at instant: LoopInstant) {
        session.deadline.queued = instant
        heap.append(Entry(at: instant, order: nextOrder, session: session))
        nextOrder &+= 1
        siftUp(heap.count - 1)
    }

    /// Takes every entry due now first, then tells their sessions: a session that asks again for an
    /// instant already past is told on the timer's next pass, not in this one.
    private func fire() {
        let now = loop.now
        var due: [IMServerSession] = []
        while let first = heap.first, first.at <= now {
            popFirst()
            guard let session = first.session, session.deadline.queued == first.at else { continue }
            session.deadline.queued = nil
            guard let wanted = session.deadline.wanted else { continue }
            if wanted > now {
                push(session, at: wanted)
            } else {
                due.append(session)
            }
        }
        for session in due where session.deadline.wanted.map({ $0 <= now }) == true {
            session.deadlinePassed()
        }
        if let first = heap.first { timer.arm(at: first.at) } else { timer.disarm() }
    }

    private func popFirst() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private func siftUp(_ start: Int) {
        var child = start
        let entry = heap[child]
        while child > 0 {
            let parent = (child - 1) / 2
            guard entry.precedes(heap[parent]) else { break }
            heap[child] = heap[parent]
            child = parent
        }
        heap[child] = entry
    }

    private func siftDown(_ start: Int) {
        var parent = start
        let entry = heap[parent]
        while true {
            var child = 2 * parent + 1
            guard child < heap.count else { break }
            if child + 1 < heap.count, heap[child + 1].precedes(heap[child]) { child += 1 }
            guard heap[child].precedes(entry) else { break }
            heap[parent] = heap[child]
            parent = child
        }
        heap[parent] = entry
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
