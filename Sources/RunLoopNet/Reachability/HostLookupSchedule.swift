import RunLoopKit

/// When ``NetworkReachability`` looks its host name up: the timing rules on their own, driven by the
/// caller's `now`, so tests check them on a virtual clock.
///
/// - A lookup is wanted at the start and after every settled change of links or routes: which
///   resolver answers, and what it answers, can depend on the network (another DNS server, a
///   split-horizon name), and a lookup that failed while the network was down may succeed now.
/// - One at a time: a change while a lookup runs asks for one more after it.
/// - Lookups start at least ``retryDelay`` apart, so a host whose links change many times a second
///   (containers coming and going) does not start a lookup thread for each change.
/// - After a failure the next lookup is due ``retryDelay`` later, doubling with each further failure
///   up to ``maximumRetryDelay``; a change of the network brings it forward (still at least
///   ``retryDelay`` after the last start). A success resets the delay and wants nothing further.
struct HostLookupSchedule: Equatable {
    /// The delay after a first failure, and the least time between two lookups.
    var retryDelay: Duration
    /// The bound on the delay after repeated failures.
    var maximumRetryDelay: Duration

    /// True from ``startIfDue(now:)`` returning true until ``finished(succeeded:now:)``.
    private(set) var isLookingUp = false
    /// When the next lookup may start; `nil` while none is wanted (or one is running).
    private(set) var nextLookup: LoopInstant?
    /// Failed lookups since the last success.
    private(set) var failures = 0
    private var lastStart: LoopInstant?
    private var changedDuringLookup = false

    init(retryDelay: Duration, maximumRetryDelay: Duration) {
        self.retryDelay = retryDelay
        self.maximumRetryDelay = maximumRetryDelay
    }

    /// The network changed (or the owner starts): a lookup is wanted, as soon as the spacing allows.
    mutating func networkChanged(now: LoopInstant) {
        if isLookingUp {
            changedDuringLookup = true
            return
        }
        let earliest = max(now, lastStart.map { $0 + retryDelay } ?? now)
        nextLookup = min(nextLookup ?? .distantFuture, earliest)
    }

    /// True when a lookup should start now; it then counts as started.
    mutating func startIfDue(now: LoopInstant) -> Bool {
        guard !isLookingUp, let due = nextLookup, due <= now else { return false }
        isLookingUp = true
        nextLookup = nil
        lastStart = now
        changedDuringLookup = false
        return true
    }

    /// The running lookup answered.
    mutating func finished(succeeded: Bool, now: LoopInstant) {
        guard isLookingUp else { return }
        isLookingUp = false
        if succeeded {
            failures = 0
        } else {
            failures += 1
            nextLookup = now + delay(afterFailures: failures)
        }
        if changedDuringLookup {
            changedDuringLookup = false
            networkChanged(now: now)
        }
    }

    /// `retryDelay` × 2^(failures − 1), at most `maximumRetryDelay`.
    func delay(afterFailures failures: Int) -> Duration {
        var delay = retryDelay
        for _ in 1..<max(1, failures) {
            if delay >= maximumRetryDelay { break }
            delay *= 2
        }
        return min(delay, maximumRetryDelay)
    }
}
