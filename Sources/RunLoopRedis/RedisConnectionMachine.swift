import RunLoopKit

/// The decisions of one ``RedisConnection``, without hiredis, sockets or clocks: the connection's
/// phase, the commands waiting for their replies and the deadlines of both. Every input comes with
/// `now`; the connection carries out what the answers say and arms one timer for ``nextDeadline``.
///
/// It keeps the promise "every command completes exactly once": a command leaves ``pending`` once,
/// by its reply (``complete(_:)``), its deadline (``timerFired(now:)``) or the connection's end
/// (``contextEnded(message:)``), and only the way it left hands its `Command` back.
struct RedisConnectionMachine<Command> {
    enum Phase: Equatable {
        case idle
        case connecting
        case ready
        /// This side is ending the connection (``close(_:)``, the connect deadline) for this reason;
        /// the context is being freed and its end will report it.
        case closing(RedisError)
        case closed(RedisError)
    }

    /// How a connection ended: its reason, and the commands still waiting, in the order sent, which
    /// fail with it.
    struct Ending {
        var reason: RedisError
        var failed: [Command]
    }

    /// What ``close(_:)`` asks of the connection.
    enum CloseStep {
        /// Free hiredis's context; its end (``contextEnded(message:)``) reports the close.
        case freeContext
        /// There was no context: the connection ended now.
        case ended(Ending)
        /// It is closed or closing already.
        case nothing
    }

    /// What a deadline asks of the connection.
    struct Expiry {
        /// Commands whose timeout passed, in the order sent: they fail with `timedOut(.command)`.
        var expired: [Command] = []
        /// The connect timeout passed: free the context (the phase says why).
        var abandonsConnect = false
    }

    private struct Pending {
        var command: Command
        var deadline: LoopInstant?
    }

    let connectTimeout: Duration?
    let commandTimeout: Duration?
    private(set) var phase = Phase.idle
    private var connectDeadline: LoopInstant?
    private var pending: [UInt64: Pending] = [:]
    private var lastID: UInt64 = 0
    /// The deadlines of pending commands, earliest first (ties in the order sent). Replies come in the
    /// order sent, so with one timeout for all an entry joins at the end and leaves from the front.
    private var deadlines: [(instant: LoopInstant, id: UInt64)] = []

    init(connectTimeout: Duration?, commandTimeout: Duration?) {
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
    }

    /// How many commands wait for their replies.
    var pendingCount: Int { pending.count }

    /// The next instant ``timerFired(now:)`` has something to do; `nil`: none.
    var nextDeadline: LoopInstant? {
        let connect = phase == .connecting ? connectDeadline : nil
        return [connect, deadlines.first?.instant].compactMap { $0 }.min()
    }

    /// `connect()`: true when the connection should open a context now (only the first time).
    mutating func start(now: LoopInstant) -> Bool {
        guard phase == .idle else { return false }
        phase = .connecting
        connectDeadline = connectTimeout.map { now + $0 }
        return true
    }

    /// hiredis reported the connection made: true when that is news (the owner's `onConnect`).
    mutating func connected() -> Bool {
        guard phase == .connecting else { return false }
        phase = .ready
        connectDeadline = nil
        return true
    }

    /// A command to send: its id (hiredis's `privdata`), or why it fails at once. `timeout` is the
    /// send's own, else the configuration's.
    mutating func submit(_ command: Command, timeout: Duration?, now: LoopInstant) -> Result<UInt64, RedisError> {
        switch phase {
        case .idle: return .failure(.closed)
        case .closing(let reason), .closed(let reason): return .failure(reason)
        case .connecting, .ready: break
        }
        lastID += 1
        let deadline = (timeout ?? commandTimeout).map { now + $0 }
        pending[lastID] = Pending(command: command, deadline: deadline)
        if let deadline { deadlines.insert((deadline, lastID), at: deadlineIndex(deadline, lastID)) }
        return .success(lastID)
    }

    /// The reply to `id` arrived (or hiredis refused to send it): its command, unless it completed
    /// already (a reply that comes after the command timed out is dropped).
    mutating func complete(_ id: UInt64) -> Command? {
        guard let entry = pending.removeValue(forKey: id) else { return nil }
        if let deadline = entry.deadline { deadlines.remove(at: deadlineIndex(deadline, id)) }
        return entry.command
    }

    /// Where `(instant, id)` is or belongs in ``deadlines``.
    private func deadlineIndex(_ instant: LoopInstant, _ id: UInt64) -> Int {
        var low = 0
        var high = deadlines.count
        while low < high {
            let middle = (low + high) / 2
            let entry = deadlines[middle]
            if entry.instant < instant || (entry.instant == instant && entry.id < id) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The loop's timer fired: what is due at `now`.
    mutating func timerFired(now: LoopInstant) -> Expiry {
        var expiry = Expiry()
        let due = deadlines.prefix { $0.instant <= now }.map(\.id).sorted()
        expiry.expired = due.compactMap { complete($0) }
        if phase == .connecting, let connectDeadline, connectDeadline <= now {
            phase = .closing(.timedOut(.connect))
            expiry.abandonsConnect = true
        }
        return expiry
    }

    /// The owner ends the connection with `reason` (``RedisError/closed``).
    mutating func close(_ reason: RedisError) -> CloseStep {
        switch phase {
        case .idle: return .ended(end(reason))
        case .connecting, .ready:
            phase = .closing(reason)
            return .freeContext
        case .closing, .closed: return .nothing
        }
    }

    /// hiredis is freeing the context (or could not make one): how the connection ended, with
    /// hiredis's error message when it had one. `nil` when it had ended already.
    mutating func contextEnded(message: String?) -> Ending? {
        switch phase {
        case .idle, .closed: return nil
        case .closing(let reason): return end(reason)
        case .connecting: return end(.connectionFailed(message ?? "the connection ended while connecting"))
        case .ready: return end(.connectionLost(message ?? "the connection ended"))
        }
    }

    private mutating func end(_ reason: RedisError) -> Ending {
        phase = .closed(reason)
        connectDeadline = nil
        let failed = pending.keys.sorted().compactMap { complete($0) }
        return Ending(reason: reason, failed: failed)
    }
}
