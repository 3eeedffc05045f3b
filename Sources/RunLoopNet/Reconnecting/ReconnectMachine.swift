import RunLoopKit

/// The decisions of a ``ReconnectingLink`` without a connection or a timer: when to connect, how long
/// to wait after a failure, when the backoff starts over, when to give up. Every input carries `now`;
/// the owner arms one timer for the wait an action names.
struct ReconnectMachine {
    enum Action: Equatable {
        /// Make a new connection and connect it.
        case connect
        /// The attempt failed: try again at `until`.
        case wait(until: LoopInstant, delay: Duration)
        /// The attempt failed and the backoff's attempts are used up.
        case giveUp
    }

    private(set) var state = ReconnectingLinkState.idle
    private(set) var backoff: ReconnectBackoff
    let stableTime: Duration
    private let jitter: JitterSource
    /// When the current connection came up, to tell a stable one from a flapping one.
    private var upSince: LoopInstant?

    init(policy: ReconnectingLinkPolicy, jitter: JitterSource) {
        backoff = ReconnectBackoff(policy: policy.backoff)
        stableTime = policy.stableTime
        self.jitter = jitter
    }

    /// The owner starts it: the first connection goes at once.
    mutating func start() -> Action? {
        guard state == .idle else { return nil }
        state = .connecting
        return .connect
    }

    /// The connection is up.
    mutating func connected(now: LoopInstant) {
        guard state == .connecting else { return }
        state = .connected
        upSince = now
    }

    /// The connection ended without the owner asking: wait the backoff, or give up. A connection
    /// that stayed up for ``stableTime`` counts as a success, so the next wait is the first one again.
    mutating func connectionEnded(now: LoopInstant) -> Action? {
        guard state == .connecting || state == .connected else { return nil }
        if let upSince, now - upSince >= stableTime { backoff.reset() }
        upSince = nil
        guard let delay = backoff.nextDelay(jitter: jitter) else {
            state = .gaveUp
            return .giveUp
        }
        state = .waiting(until: now + delay)
        return .wait(until: now + delay, delay: delay)
    }

    /// The wait's timer fired.
    mutating func timerFired(now: LoopInstant) -> Action? {
        guard case .waiting(let until) = state, now >= until else { return nil }
        state = .connecting
        return .connect
    }

    /// The owner closed it: nothing more happens.
    mutating func close() {
        state = .closed
        upSince = nil
    }
}
