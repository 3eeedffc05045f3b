import RunLoopKit

#if canImport(Glibc)
import Glibc
import RunLoopIMCore
#endif

/// The login admission decisions of ``IMLoginLimits``, pure: `now` comes in, decisions go out, nothing
/// runs by itself. The server's login gate (IMServer+Logins) feeds it and acts on what it says.
///
/// A login moves queued → running (a check holds one of `concurrentChecks`) → released, or, after a
/// wrong password, → holding (its answer held back) → released. From arrival to release it takes one
/// of its address's `pendingChecksPerAddress` places.
struct LoginThrottle {
    typealias Ticket = UInt64

    enum Admission: Equatable {
        /// Waits for a check; `evicted` (queued earlier from a worse address) was dropped to make room
        /// and must be refused for now.
        case queued(Ticket, evicted: Ticket?)
        case refused(retryAfter: Duration)
    }

    /// What a check found, as far as the budgets care.
    enum Outcome: Equatable {
        case succeeded
        /// Wrong credentials: counts against the address and the account.
        case failed
        /// Neither (storage failure, stopping): no budget changes.
        case neither
    }

    enum Stage: Equatable {
        case queued
        case running(since: LoopInstant)
        case holding
    }

    struct Login: Equatable {
        let address: LoginAddress
        let account: String
        var stage: Stage
    }

    /// Whose refusals a retry schedule spreads out, at which pace.
    enum RetryKey: Hashable {
        /// Connections over the address's limit of connections not logged in: they come back at the
        /// pace such connections log in.
        case connections(LoginAddress)
        /// Logins over the address's limit of logins in progress: at the pace of its checks.
        case checks(LoginAddress)
        /// Logins over the queue's limits: at the pace of all checks.
        case server
    }

    /// A failure count that halves every half-life.
    struct DecayingCount: Equatable {
        var value: Double
        var at: LoopInstant

        func value(at now: LoopInstant, halfLife: Duration) -> Double {
            guard now > at, halfLife > .zero else { return value }
            return value * exp2(-((now - at) / halfLife))
        }
    }

    let limits: IMLoginLimits
    private(set) var logins: [Ticket: Login] = [:]
    /// Queued tickets in arrival order (tickets grow, so arrival order is ticket order).
    private(set) var queue: [Ticket] = []
    private(set) var running = 0
    private(set) var pending: [LoginAddress: Int] = [:]
    private(set) var unauthenticated: [LoginAddress: Int] = [:]
    private(set) var addressFailures: [LoginAddress: DecayingCount] = [:]
    private(set) var accountFailures: [String: DecayingCount] = [:]
    private var nextRetry: [RetryKey: LoopInstant] = [:]
    /// Recent check time (moving average): sets the queue's expected wait and the retry spacing.
    private(set) var checkEstimate: Duration = .milliseconds(20)
    /// Recent time from connecting to logging in (moving average), for connections refused at once.
    private(set) var loginEstimate: Duration = .milliseconds(20)
    private var lastTicket: Ticket = 0
    private var pruneAt = 1024
    private var prunedAt: LoopInstant?
    /// Failure records kept at most; beyond, the smallest go first.
    static let maximumTracked = 65_536
    /// The smallest spacing between two refusals' retry times.
    static let minimumSpacing: Duration = .milliseconds(1)

    init(limits: IMLoginLimits) {
        self.limits = limits
    }

    var concurrency: Int { max(1, limits.concurrentChecks) }

    // MARK: Connections

    /// A connection from `address` opened: `nil` if it may log in, otherwise how long it should wait
    /// before trying again (it is refused).
    mutating func connectionOpened(from address: LoginAddress, now: LoopInstant) -> Duration? {
        pruneIfLarge(now: now)
        if let cap = limits.unauthenticatedPerAddress, unauthenticated[address, default: 0] >= cap {
            return retryAfter(.connections(address), now: now)
        }
        unauthenticated[address, default: 0] += 1
        return nil
    }

    /// A connection counted by ``connectionOpened(from:now:)`` ended after `lifetime`, or logged in
    /// after it (`loggedIn`: the time counts toward the login pace).
    mutating func connectionSettled(from address: LoginAddress, after lifetime: Duration, loggedIn: Bool) {
        guard let count = unauthenticated[address] else { return }
        unauthenticated[address] = count > 1 ? count - 1 : nil
        if loggedIn { loginEstimate = loginEstimate * 0.8 + lifetime * 0.2 }
    }

    // MARK: Checks

    /// A LOGIN from `address` for `account` (compared as given: pass a case-folded name).
    mutating func loginArrived(from address: LoginAddress, account: String, now: LoopInstant) -> Admission {
        pruneIfLarge(now: now)
        if pending[address, default: 0] >= limits.pendingChecksPerAddress {
            return .refused(retryAfter: retryAfter(.checks(address), now: now))
        }
        var evicted: Ticket?
        if isQueueFull {
            // A cleaner newcomer takes the place of the worst login queued: flooders cannot fill the
            // queue against clean addresses.
            var scores: [LoginAddress: Double] = [:]
            let worst = queue.max { priority($0, now, &scores) < priority($1, now, &scores) }
            guard let worst, failures(of: address, now: now) < priority(worst, now, &scores).score else {
                return .refused(retryAfter: retryAfter(.server, now: now))
            }
            _ = cancel(worst)
            evicted = worst
        }
        lastTicket += 1
        logins[lastTicket] = Login(address: address, account: account, stage: .queued)
        queue.append(lastTicket)
        pending[address, default: 0] += 1
        return .queued(lastTicket, evicted: evicted)
    }

    private var isQueueFull: Bool {
        guard !queue.isEmpty else { return false }
        if queue.count >= limits.maximumQueuedChecks { return true }
        return checkEstimate * (Double(queue.count) / Double(concurrency)) >= limits.maximumQueueWait
    }

    /// The next login to check now, if a check may start: the queued one whose address has the fewest
    /// recent failures, the earliest among equals.
    mutating func nextCheck(now: LoopInstant) -> Ticket? {
        guard running < concurrency, !queue.isEmpty else { return nil }
        var scores: [LoginAddress: Double] = [:]
        var best = 0
        for index in queue.indices.dropFirst() where priority(queue[index], now, &scores) < priority(queue[best], now, &scores) {
            best = index
        }
        let ticket = queue.remove(at: best)
        logins[ticket]?.stage = .running(since: now)
        running += 1
        return ticket
    }

    private func priority(_ ticket: Ticket, _ now: LoopInstant, _ scores: inout [LoginAddress: Double]) -> Priority {
        guard let address = logins[ticket]?.address else { return Priority(score: .infinity, ticket: ticket) }
        if let score = scores[address] { return Priority(score: score, ticket: ticket) }
        let score = failures(of: address, now: now)
        scores[address] = score
        return Priority(score: score, ticket: ticket)
    }

    struct Priority: Comparable {
        let score: Double
        let ticket: Ticket
        static func < (lhs: Priority, rhs: Priority) -> Bool { (lhs.score, lhs.ticket) < (rhs.score, rhs.ticket) }
    }

    /// Drops a login still queued (its client went away, or a newer login replaced it); true if it was.
    mutating func cancel(_ ticket: Ticket) -> Bool {
        guard let index = queue.firstIndex(of: ticket) else { return false }
        queue.remove(at: index)
        release(ticket)
        return true
    }

    /// A check finished: how long to hold its answer back (zero but after a wrong password), or `nil`
    /// for a ticket that is not running (an answer given twice).
    mutating func checkFinished(_ ticket: Ticket, _ outcome: Outcome, now: LoopInstant) -> Duration? {
        guard let login = logins[ticket], case .running(let since) = login.stage else { return nil }
        running -= 1
        // Slow enough to follow a change of load, steady enough not to jump at one odd check.
        checkEstimate = checkEstimate * 0.8 + (now - since) * 0.2
        switch outcome {
        case .succeeded:
            addressFailures[login.address] = nil
            accountFailures[login.account] = nil
        case .neither:
            break
        case .failed:
            let halfLife = limits.failureHalfLife
            let count = max(
                Self.addFailure(&addressFailures[login.address], now: now, halfLife: halfLife),
                Self.addFailure(&accountFailures[login.account], now: now, halfLife: halfLife))
            let delay = min(limits.maximumFailureDelay, limits.failureDelay * exp2(min(count, 40) - 1))
            if delay > .zero {
                logins[ticket]?.stage = .holding
                return delay
            }
        }
        release(ticket)
        return .zero
    }

    /// The failure delay of a held login is over: its address's place is free again.
    mutating func holdEnded(_ ticket: Ticket) {
        guard logins[ticket]?.stage == .holding else { return }
        release(ticket)
    }

    private static func addFailure(_ record: inout DecayingCount?, now: LoopInstant, halfLife: Duration) -> Double {
        let value = (record?.value(at: now, halfLife: halfLife) ?? 0) + 1
        record = DecayingCount(value: value, at: now)
        return value
    }

    private mutating func release(_ ticket: Ticket) {
        guard let login = logins.removeValue(forKey: ticket) else { return }
        let count = pending[login.address, default: 0]
        pending[login.address] = count > 1 ? count - 1 : nil
    }

    /// Recent failures of `address` (decayed: one failure a half-life ago counts 0.5).
    func failures(of address: LoginAddress, now: LoopInstant) -> Double {
        addressFailures[address]?.value(at: now, halfLife: limits.failureHalfLife) ?? 0
    }

    func failures(ofAccount account: String, now: LoopInstant) -> Double {
        accountFailures[account]?.value(at: now, halfLife: limits.failureHalfLife) ?? 0
    }

    func stage(of ticket: Ticket) -> Stage? { logins[ticket]?.stage }

    // MARK: Retry times

    /// The wait to give a refused client: at least `minimumRetryAfter`, and each refusal for the same
    /// key a spacing later than the previous one, the spacing being the time the server needs per
    /// login of that kind at its recent pace. A crowd refused together thus comes back one by one, at
    /// the pace it can be served.
    mutating func retryAfter(_ key: RetryKey, now: LoopInstant) -> Duration {
        let pace: Duration
        switch key {
        case .connections: pace = loginEstimate / max(1, limits.unauthenticatedPerAddress ?? 1)
        case .checks: pace = checkEstimate / max(1, min(limits.pendingChecksPerAddress, concurrency))
        case .server: pace = checkEstimate / concurrency
        }
        let spacing = max(Self.minimumSpacing, pace)
        let slot = max(nextRetry[key] ?? now, now + limits.minimumRetryAfter)
        nextRetry[key] = slot + spacing
        return slot - now
    }

    // MARK: Memory

    /// Keeps the records bounded: decayed ones and past retry slots go once the tables doubled since
    /// the last pass, or a half-life passed (amortized constant time); the smallest go if still over
    /// ``maximumTracked``.
    private mutating func pruneIfLarge(now: LoopInstant) {
        guard let prunedAt else { return self.prunedAt = now }
        guard
            addressFailures.count + accountFailures.count + nextRetry.count >= pruneAt
                || now >= prunedAt + limits.failureHalfLife
        else { return }
        self.prunedAt = now
        let halfLife = limits.failureHalfLife
        addressFailures = addressFailures.filter { $0.value.value(at: now, halfLife: halfLife) >= 0.01 }
        accountFailures = accountFailures.filter { $0.value.value(at: now, halfLife: halfLife) >= 0.01 }
        nextRetry = nextRetry.filter { $0.value > now }
        if addressFailures.count > Self.maximumTracked {
            addressFailures = Dictionary(
                uniqueKeysWithValues:
                    addressFailures
                    .sorted { $0.value.value(at: now, halfLife: halfLife) > $1.value.value(at: now, halfLife: halfLife) }
                    .prefix(Self.maximumTracked / 2).map { ($0.key, $0.value) })
        }
        if accountFailures.count > Self.maximumTracked {
            accountFailures = Dictionary(
                uniqueKeysWithValues:
                    accountFailures
                    .sorted { $0.value.value(at: now, halfLife: halfLife) > $1.value.value(at: now, halfLife: halfLife) }
                    .prefix(Self.maximumTracked / 2).map { ($0.key, $0.value) })
        }
        pruneAt = max(1024, 2 * (addressFailures.count + accountFailures.count + nextRetry.count))
    }
}
