import RunLoopKit
import RunLoopNet
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// The login admission decisions on virtual time: no sockets, no threads, `now` moved by hand.
@Suite("Login throttle (virtual time)")
struct LoginThrottleTests {
    let start = LoopInstant(nanoseconds: 1_000_000_000_000)

    func address(_ text: String) -> LoginAddress { LoginAddress(SocketAddress(ip: text, port: 40_000)) }

    func limits(_ tweak: (inout IMLoginLimits) -> Void = { _ in }) -> IMLoginLimits {
        var limits = IMLoginLimits()
        tweak(&limits)
        return limits
    }

    func ticket(_ admission: LoginThrottle.Admission) throws -> LoginThrottle.Ticket {
        guard case .queued(let ticket, _) = admission else { throw Refused(admission: admission) }
        return ticket
    }

    struct Refused: Error { let admission: LoginThrottle.Admission }

    /// One wrong password from `from`, checked and held, its delay over.
    func fail(_ throttle: inout LoginThrottle, from: LoginAddress, account: String = "victim", at now: LoopInstant) throws {
        let queued = try ticket(throttle.loginArrived(from: from, account: account, now: now))
        #expect(throttle.nextCheck(now: now) == queued)
        let finished = throttle.checkFinished(queued, .failed, now: now)
        let hold = try #require(finished)
        #expect(hold > .zero)
        throttle.holdEnded(queued)
    }

    @Test("checks run a bounded number at once; the next starts when one finishes")
    func boundedChecks() throws {
        var throttle = LoginThrottle(limits: limits { $0.concurrentChecks = 2 })
        let tickets = try (1...3).map { try ticket(throttle.loginArrived(from: address("10.0.0.\($0)"), account: "u\($0)", now: start)) }
        #expect(throttle.nextCheck(now: start) == tickets[0])
        #expect(throttle.nextCheck(now: start) == tickets[1])
        #expect(throttle.nextCheck(now: start) == nil, "two run; the third waits")
        #expect(throttle.checkFinished(tickets[0], .succeeded, now: start + .milliseconds(40)) == .zero)
        #expect(throttle.nextCheck(now: start + .milliseconds(40)) == tickets[2])
        #expect(throttle.checkFinished(tickets[0], .succeeded, now: start + .milliseconds(40)) == nil, "an answer given twice is ignored")
        #expect(throttle.running == 2)
    }

    @Test("an address has a few logins in progress at most; beyond, refusals carry retry times spread out; other addresses are unaffected")
    func perAddressCap() throws {
        var throttle = LoginThrottle(limits: limits { $0.pendingChecksPerAddress = 2 })
        let flooder = address("10.0.0.66")
        for _ in 0..<2 { _ = try ticket(throttle.loginArrived(from: flooder, account: "victim", now: start)) }
        var waits: [Duration] = []
        for _ in 0..<5 {
            guard case .refused(let wait) = throttle.loginArrived(from: flooder, account: "victim", now: start) else {
                Issue.record("a third login from one address is refused")
                return
            }
            waits.append(wait)
        }
        #expect(waits.first == throttle.limits.minimumRetryAfter)
        #expect(zip(waits, waits.dropFirst()).allSatisfy { $0 < $1 }, "each later than the one before: \(waits)")
        _ = try ticket(throttle.loginArrived(from: address("10.0.0.7"), account: "someone", now: start))
    }

    @Test("a clean address is checked before addresses that keep failing, however long they waited; among failing ones, fewer failures first")
    func cleanFirst() throws {
        var throttle = LoginThrottle(limits: limits { $0.concurrentChecks = 1 })
        let often = address("10.0.0.1")
        let once = address("10.0.0.2")
        let clean = address("10.0.0.3")
        for _ in 0..<3 { try fail(&throttle, from: often, at: start) }
        try fail(&throttle, from: once, at: start)
        let now = start + .seconds(1)
        let oftenTicket = try ticket(throttle.loginArrived(from: often, account: "victim", now: now))
        let onceTicket = try ticket(throttle.loginArrived(from: once, account: "victim", now: now))
        let cleanTicket = try ticket(throttle.loginArrived(from: clean, account: "victim", now: now))
        #expect(throttle.nextCheck(now: now) == cleanTicket)
        _ = throttle.checkFinished(cleanTicket, .succeeded, now: now)
        #expect(throttle.nextCheck(now: now) == onceTicket)
        _ = throttle.checkFinished(onceTicket, .neither, now: now)
        #expect(throttle.nextCheck(now: now) == oftenTicket)
    }

    @Test("a wrong password's answer is held back, doubling per recent failure up to the cap; failures decay with time; a success clears them")
    func failureDelays() throws {
        var throttle = LoginThrottle(
            limits: limits {
                $0.failureDelay = .milliseconds(250)
                $0.maximumFailureDelay = .seconds(8)
                $0.failureHalfLife = .seconds(300)
                $0.pendingChecksPerAddress = 1
            })
        let typist = address("10.0.0.9")
        func wrong(at now: LoopInstant) throws -> Duration {
            let queued = try ticket(throttle.loginArrived(from: typist, account: "ann", now: now))
            #expect(throttle.nextCheck(now: now) == queued)
            let finished = throttle.checkFinished(queued, .failed, now: now)
            let hold = try #require(finished)
            if case .refused = throttle.loginArrived(from: typist, account: "ann", now: now) {
            } else {
                Issue.record("the held login keeps its address's place")
            }
            throttle.holdEnded(queued)
            return hold
        }
        let holds = try (0..<7).map { _ in try wrong(at: start) }
        #expect(holds == [250, 500, 1000, 2000, 4000, 8000, 8000].map { Duration.milliseconds($0) })
        // Seven failures count as 3.5 one half-life later: the next makes 4.5, held 250 ms × 2^3.5 ≈ 2.83 s.
        let halfLifeLater = try wrong(at: start + .seconds(300))
        #expect(halfLifeLater > .milliseconds(2800) && halfLifeLater < .milliseconds(2860), "\(halfLifeLater)")
        // Ten half-lives on they count as nothing.
        let now = start + .seconds(3300)
        let muchLater = try wrong(at: now)
        #expect(muchLater >= .milliseconds(250) && muchLater < .milliseconds(260), "\(muchLater)")
        let right = try ticket(throttle.loginArrived(from: typist, account: "ann", now: now))
        #expect(throttle.nextCheck(now: now) == right)
        #expect(throttle.checkFinished(right, .succeeded, now: now) == .zero)
        #expect(try wrong(at: now) == .milliseconds(250), "a success starts the count again")
    }

    @Test(
        "an account under attack from many addresses: a wrong password from a new address is held long, the right one from a clean address is checked first and answered at once"
    )
    func noLockout() throws {
        var throttle = LoginThrottle(limits: limits { $0.concurrentChecks = 1 })
        for index in 1...10 { try fail(&throttle, from: address("10.0.1.\(index)"), at: start) }
        #expect(throttle.failures(ofAccount: "victim", now: start) == 10)
        let attacker = try ticket(throttle.loginArrived(from: address("10.0.2.1"), account: "victim", now: start))
        let owner = try ticket(throttle.loginArrived(from: address("192.168.1.20"), account: "victim", now: start))
        let flooders = try (1...10).map { try ticket(throttle.loginArrived(from: address("10.0.1.\($0)"), account: "victim", now: start)) }
        #expect(throttle.nextCheck(now: start) == attacker, "both clean, first come")
        #expect(
            throttle.checkFinished(attacker, .failed, now: start) == throttle.limits.maximumFailureDelay,
            "the account's failures hold a new address's wrong password to the cap")
        #expect(throttle.nextCheck(now: start) == owner, "the owner's clean address goes before ten failing ones")
        #expect(throttle.checkFinished(owner, .succeeded, now: start) == .zero, "no lockout: the right password is answered at once")
        #expect(throttle.nextCheck(now: start).map(flooders.contains) == true)
    }

    @Test("connections not logged in yet are capped per address; refusals carry spread retry times; a settled connection frees a place")
    func unauthenticatedCap() {
        var throttle = LoginThrottle(limits: limits { $0.unauthenticatedPerAddress = 3 })
        let crowd = address("10.0.0.50")
        for _ in 0..<3 { #expect(throttle.connectionOpened(from: crowd, now: start) == nil) }
        let waits = (0..<4).compactMap { _ in throttle.connectionOpened(from: crowd, now: start) }
        #expect(waits.count == 4 && Set(waits).count == 4, "refused, each told a different time: \(waits)")
        #expect(throttle.connectionOpened(from: address("10.0.0.51"), now: start) == nil)
        throttle.connectionSettled(from: crowd, after: .milliseconds(5), loggedIn: true)
        #expect(throttle.connectionOpened(from: crowd, now: start) == nil)
        #expect(throttle.unauthenticated[crowd] == 3)
    }

    @Test("a full queue refuses a flooding newcomer but gives a clean newcomer the place of the worst login queued")
    func fullQueue() throws {
        var throttle = LoginThrottle(
            limits: limits {
                $0.concurrentChecks = 1
                $0.maximumQueuedChecks = 3
                $0.pendingChecksPerAddress = 10
            })
        let flooder = address("10.0.0.66")
        try fail(&throttle, from: flooder, at: start)
        let running = try ticket(throttle.loginArrived(from: flooder, account: "victim", now: start))
        #expect(throttle.nextCheck(now: start) == running)
        let queued = try (0..<3).map { _ in try ticket(throttle.loginArrived(from: flooder, account: "victim", now: start)) }
        guard case .refused = throttle.loginArrived(from: flooder, account: "victim", now: start) else {
            Issue.record("a failing address does not get past a full queue")
            return
        }
        #expect(
            throttle.loginArrived(from: address("10.0.0.7"), account: "ann", now: start) == .queued(queued[2] + 1, evicted: queued[2]),
            "the newest of the worst goes")
        #expect(throttle.queue.count == 3 && throttle.pending[flooder] == 3)
    }

    @Test("the queue is bounded in time too: when recent checks say the wait would pass maximumQueueWait, a login is refused for now")
    func queueWait() throws {
        var throttle = LoginThrottle(
            limits: limits {
                $0.concurrentChecks = 1
                $0.maximumQueueWait = .seconds(2)
            })
        // Slow checks teach the estimate: 1 s each.
        var now = start
        for index in 0..<20 {
            let queued = try ticket(throttle.loginArrived(from: address("10.0.3.\(index)"), account: "u\(index)", now: now))
            #expect(throttle.nextCheck(now: now) == queued)
            now = now + .seconds(1)
            _ = throttle.checkFinished(queued, .succeeded, now: now)
        }
        #expect(throttle.checkEstimate > .milliseconds(950))
        let admitted = (0..<5).map { throttle.loginArrived(from: address("10.0.4.\($0)"), account: "v\($0)", now: now) }
        // The third waits behind two checks (about 1.98 s); the fourth would wait about 2.96 s.
        #expect(admitted.filter { if case .queued = $0 { return true } else { return false } }.count == 3, "\(admitted)")
    }

    @Test("IPv6 clients count by /64, IPv4-mapped ones as their IPv4 address, and the failure records stay bounded")
    func addressesAndMemory() throws {
        #expect(address("2001:db8:1:2::1") == address("2001:db8:1:2:ffff::9"))
        #expect(address("2001:db8:1:2::1") != address("2001:db8:1:3::1"))
        #expect(address("::ffff:192.0.2.1") == address("192.0.2.1"))
        #expect(address("2001:db8:1:2::1").description == "2001:db8:1:2::/64")
        var throttle = LoginThrottle(limits: limits { $0.concurrentChecks = 1 })
        for index in 0..<3000 {
            try fail(&throttle, from: address("10.\(index / 250).\(index % 250).1"), account: "a\(index)", at: start)
        }
        // Hours later the old failures have decayed to nothing: the next arrivals sweep them away.
        let later = start + .seconds(6 * 3600)
        for index in 0..<10 {
            _ = throttle.loginArrived(from: address("10.200.0.\(index)"), account: "b\(index)", now: later)
        }
        #expect(
            throttle.addressFailures.count < 100 && throttle.accountFailures.count < 100,
            "\(throttle.addressFailures.count) address and \(throttle.accountFailures.count) account records")
    }
}
