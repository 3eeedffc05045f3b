import RunLoopKit

/// The decisions of a node's lease without Redis or a timer: when to register (join, rejoin, or
/// re-register the sessions), when to refresh, when to look for dead nodes, and when the lease counts
/// as lost. Every input carries `now` on the loop's clock and returns what to do; the owner arms one
/// timer for ``nextDeadline`` and calls ``due(now:)`` when it fires.
///
/// Each command it asks for carries an id, and an answer counts only for the command still awaited:
/// a late answer (after a timeout, or after the lease was declared lost) changes nothing.
struct NodeLeaseMachine {
    enum Action: Equatable {
        /// Send the register script: keep `keeping` if the lease still holds it, else take a new epoch
        /// above it; either way put this node's current session counts in place.
        case register(id: UInt64, keeping: UInt64)
        /// Send the refresh script for `epoch`.
        case refresh(id: UInt64, epoch: UInt64)
        /// Look for registered nodes whose lease is gone and reap them.
        case reap
        /// Tell the owner the lease changed.
        case report(NodeLeaseState)
    }

    let policy: NodeLeasePolicy
    private(set) var state = NodeLeaseState.joining
    /// The epoch held last: kept by a re-register while the lease holds it, and the floor of the next.
    private(set) var lastEpoch: UInt64 = 0
    private var started = false
    /// When the lease lapses at the latest, counted from when the command that set it was sent (the
    /// server's clock started later, so the node gives up first).
    private var expiresAt: LoopInstant?
    private var registerDue: LoopInstant?
    private var refreshDue: LoopInstant?
    private var reapDue: LoopInstant?
    private var registering: Command?
    private var refreshing: Command?
    private var nextID: UInt64 = 0

    private struct Command {
        let id: UInt64
        let sentAt: LoopInstant
    }

    init(policy: NodeLeasePolicy) { self.policy = policy }

    /// A register is awaited: Redis is about to be told every count, so session scripts wait for it.
    var isRegistering: Bool { registering != nil }

    /// The next instant ``due(now:)`` has something to do; `nil`: nothing until an answer comes.
    var nextDeadline: LoopInstant? {
        guard started, state != .left else { return nil }
        var deadlines: [LoopInstant?] = [registering == nil ? registerDue : nil]
        if case .held = state {
            deadlines += [expiresAt, registering == nil && refreshing == nil ? refreshDue : nil, reapDue]
        }
        return deadlines.compactMap { $0 }.min()
    }

    /// The owner starts it: the first register goes at once.
    mutating func start(now: LoopInstant) -> [Action] {
        guard !started else { return [] }
        started = true
        registerDue = now
        return due(now: now)
    }

    /// What is due at `now`: a lapsed lease is lost, then the register, refresh and reap that are due.
    mutating func due(now: LoopInstant) -> [Action] {
        guard started, state != .left else { return [] }
        var actions: [Action] = []
        if case .held = state, let expiresAt, now >= expiresAt {
            actions += lose(now: now)
        }
        if registering == nil, let due = registerDue, now >= due {
            registerDue = nil
            registering = command(now)
            actions.append(.register(id: nextID, keeping: lastEpoch))
        }
        guard case .held(let epoch) = state else { return actions }
        if registering == nil, refreshing == nil, let due = refreshDue, now >= due {
            refreshDue = nil
            refreshing = command(now)
            actions.append(.refresh(id: nextID, epoch: epoch))
        }
        if let due = reapDue, now >= due {
            reapDue = now + policy.reapInterval
            actions.append(.reap)
        }
        return actions
    }

    /// The register answered: the node holds `epoch` (the one it kept, or a new one).
    mutating func registered(id: UInt64, epoch: UInt64, now: LoopInstant) -> [Action] {
        guard let sent = registering, sent.id == id, state != .left else { return [] }
        registering = nil
        registerDue = nil
        refreshing = nil
        lastEpoch = epoch
        expiresAt = sent.sentAt + policy.ttl
        refreshDue = sent.sentAt + policy.refreshInterval
        // A node that just joined looks for dead ones at once: after a restart of the whole cluster
        // their entries would otherwise wait a full interval.
        if reapDue == nil { reapDue = now }
        var actions: [Action] = []
        // A re-register that could not keep the epoch (Redis restarted empty) lost the lease too: the
        // owner hears it as every other loss.
        if case .held(let held) = state, held != epoch { actions.append(.report(.fenced)) }
        if state != .held(epoch: epoch) {
            state = .held(epoch: epoch)
            actions.append(.report(state))
        }
        return actions + due(now: now)
    }

    /// The register failed or timed out (it may have run: the next one replaces what it did).
    mutating func registerFailed(id: UInt64, now: LoopInstant) -> [Action] {
        guard let sent = registering, sent.id == id else { return [] }
        registering = nil
        // A reconnect may have asked for a register at once meanwhile: keep the sooner.
        registerDue = min(registerDue ?? .distantFuture, now + policy.retryInterval)
        return due(now: now)
    }

    /// The refresh extended the lease.
    mutating func refreshed(id: UInt64, now: LoopInstant) -> [Action] {
        guard let sent = refreshing, sent.id == id else { return [] }
        refreshing = nil
        expiresAt = sent.sentAt + policy.ttl
        refreshDue = sent.sentAt + policy.refreshInterval
        return due(now: now)
    }

    /// The refresh failed or timed out: try again soon; the lease lapses at its time all the same.
    mutating func refreshFailed(id: UInt64, now: LoopInstant) -> [Action] {
        guard let sent = refreshing, sent.id == id else { return [] }
        refreshing = nil
        refreshDue = now + policy.retryInterval
        return due(now: now)
    }

    /// The refresh found the lease gone or another epoch's: the node is fenced.
    mutating func refreshRefused(id: UInt64, now: LoopInstant) -> [Action] {
        guard let sent = refreshing, sent.id == id else { return [] }
        return lose(now: now) + due(now: now)
    }

    /// A session script found that `epoch` no longer holds the lease. Ignored when it is not the
    /// epoch held, or when a register is awaited (it was sent after the script: its answer decides).
    mutating func leaseLost(epoch: UInt64, now: LoopInstant) -> [Action] {
        guard state == .held(epoch: epoch), registering == nil else { return [] }
        return lose(now: now) + due(now: now)
    }

    /// A new connection to Redis is up: re-register at once, since what was sent on the old one may
    /// or may not have run, and Redis may have restarted empty.
    mutating func connectionUp(now: LoopInstant) -> [Action] {
        guard started, state != .left else { return [] }
        registerDue = now
        return due(now: now)
    }

    /// The node leaves (or is closed): nothing more is asked.
    mutating func leave() -> [Action] {
        guard state != .left else { return [] }
        state = .left
        registering = nil
        refreshing = nil
        return [.report(.left)]
    }

    private mutating func lose(now: LoopInstant) -> [Action] {
        state = .fenced
        expiresAt = nil
        refreshing = nil
        refreshDue = nil
        registerDue = now
        return [.report(.fenced)]
    }

    private mutating func command(_ now: LoopInstant) -> Command {
        nextID += 1
        return Command(id: nextID, sentAt: now)
    }
}
