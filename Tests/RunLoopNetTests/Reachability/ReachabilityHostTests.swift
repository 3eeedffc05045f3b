import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopNet

/// When a host name is looked up: the pure rules, on a virtual `now`.
@Suite("Reachability: when a host name is looked up")
struct HostLookupScheduleTests {
    let t0 = LoopInstant(nanoseconds: 1_000_000_000_000)

    /// `startIfDue` outside `#expect`, which cannot call a mutating method.
    func start(_ schedule: inout HostLookupSchedule, at now: LoopInstant) -> Bool {
        schedule.startIfDue(now: now)
    }

    func schedule() -> HostLookupSchedule {
        HostLookupSchedule(retryDelay: .seconds(1), maximumRetryDelay: .seconds(30))
    }

    @Test("a lookup at the start; after a success nothing more is wanted")
    func startAndSucceed() {
        var schedule = schedule()
        #expect(!start(&schedule, at: t0), "nothing wanted before the start")
        schedule.networkChanged(now: t0)
        #expect(start(&schedule, at: t0))
        #expect(!start(&schedule, at: t0), "one at a time")
        schedule.finished(succeeded: true, now: t0 + .milliseconds(3))
        #expect(schedule.nextLookup == nil)
        #expect(!schedule.isLookingUp)
    }

    @Test("failures back off from the retry delay, doubling up to the bound; a success resets the delay")
    func backoff() {
        var schedule = schedule()
        schedule.networkChanged(now: t0)
        var now = t0
        var delays: [Duration] = []
        for _ in 0..<8 {
            #expect(start(&schedule, at: now))
            schedule.finished(succeeded: false, now: now)
            guard let next = schedule.nextLookup else { break }
            #expect(!start(&schedule, at: next - .nanoseconds(1)), "not before it is due")
            delays.append(next - now)
            now = next
        }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30, 30].map { Duration.seconds($0) })
        #expect(schedule.failures == 8)
        #expect(start(&schedule, at: now))
        schedule.finished(succeeded: true, now: now)
        #expect(schedule.failures == 0)
        #expect(schedule.nextLookup == nil)
        schedule.networkChanged(now: now + .seconds(5))
        #expect(start(&schedule, at: now + .seconds(5)))
        schedule.finished(succeeded: false, now: now + .seconds(5))
        #expect(schedule.nextLookup == now + .seconds(6), "the first delay again")
    }

    @Test("a change during a lookup asks for one more after it, no sooner than the retry delay after the last start")
    func changeDuringLookup() {
        var schedule = schedule()
        schedule.networkChanged(now: t0)
        #expect(start(&schedule, at: t0))
        schedule.networkChanged(now: t0 + .milliseconds(100))
        schedule.networkChanged(now: t0 + .milliseconds(200))
        #expect(schedule.nextLookup == nil, "nothing while one runs")
        schedule.finished(succeeded: true, now: t0 + .milliseconds(300))
        #expect(schedule.nextLookup == t0 + .seconds(1))
        // A slow lookup: the next may start as soon as it answers.
        #expect(start(&schedule, at: t0 + .seconds(1)))
        schedule.networkChanged(now: t0 + .seconds(2))
        schedule.finished(succeeded: true, now: t0 + .seconds(4))
        #expect(schedule.nextLookup == t0 + .seconds(4))
    }

    @Test("many changes a second start at most one lookup per retry delay")
    func spacing() {
        var schedule = schedule()
        var starts: [LoopInstant] = []
        var now = t0
        while now < t0 + .milliseconds(3_500) {
            schedule.networkChanged(now: now)
            if schedule.startIfDue(now: now) {
                starts.append(now)
                schedule.finished(succeeded: true, now: now + .milliseconds(10))
            }
            now = now + .milliseconds(50)
        }
        #expect(starts == [0, 1, 2, 3].map { t0 + .seconds($0) })
    }

    @Test("a change of the network brings a backed-off retry forward")
    func changeBringsRetryForward() {
        var schedule = schedule()
        schedule.networkChanged(now: t0)
        var now = t0
        for _ in 0..<4 {
            _ = schedule.startIfDue(now: now)
            schedule.finished(succeeded: false, now: now)
            now = schedule.nextLookup!
        }
        // Due 8 s after the fourth start (at t0 + 7 s): the network changes 2 s in.
        _ = schedule.startIfDue(now: now)
        schedule.finished(succeeded: false, now: now)
        #expect(schedule.nextLookup == now + .seconds(16))
        schedule.networkChanged(now: now + .seconds(2))
        #expect(schedule.nextLookup == now + .seconds(2))
        // Right after a start, a change waits for the spacing.
        #expect(start(&schedule, at: now + .seconds(2)))
        schedule.finished(succeeded: false, now: now + .seconds(2))
        schedule.networkChanged(now: now + .milliseconds(2_100))
        #expect(schedule.nextLookup == now + .seconds(3))
    }
}

/// NetworkReachability(host:) with a scripted resolver: on a virtual clock where timing matters, on the
/// test's own network otherwise (only a loopback address and a scope that names no interface, which
/// judge the same on any host). Link and route changes are in ReachabilityHostNamespaceTests.
@Suite("Reachability: following a host name")
struct ReachabilityHostTests {
    /// An address no host has a route to: its scope names no interface.
    static let nowhere = "fe80::1%99999"

    @Test("a name starts reachable without asking, is looked up off init, then judged by the route to its address")
    func judgedByItsAddress() async throws {
        let outcome = try await onLoopThread { () throws -> [String] in
            let resolver = ScriptedResolver([ScriptedResolver.addresses(Self.nowhere)])
            let reachability = try NetworkReachability(host: "chat.test", resolver: resolver)
            defer { reachability.invalidate() }
            let recorder = PathRecorder(reachability)
            var notes = [
                "initial \(reachability.path)", "host \(reachability.host ?? "nil")", "target \(String(describing: reachability.target))",
                "resolved \(reachability.resolvedAddresses.count)", "lookups \(resolver.calls.map { "\($0.host):\($0.port)" })"
            ]
            _ = try recorder.waitFor(1, since: RunLoop.current.now, limit: .seconds(10))
            try recorder.settle(for: .milliseconds(50))
            notes.append("resolved to it \(reachability.resolvedAddresses == [SocketAddress(ip: Self.nowhere, port: 0)!])")
            notes += recorder.paths.map { "changed \($0)" }
            return notes
        }
        #expect(Array(outcome.prefix(5)) == ["initial reachable", "host chat.test", "target nil", "resolved 0", "lookups [\"chat.test:0\"]"])
        #expect(outcome.dropFirst(5).first == "resolved to it true", "\(outcome)")
        let changes = outcome.dropFirst(6)
        #expect(changes.count == 1, "\(outcome)")
        #expect(changes.first?.hasPrefix("changed unreachable: chat.test: no route to fe80::1%99999") == true, "\(outcome)")
    }

    @Test("an IP literal given as the host is followed as an address, without a lookup")
    func literal() async throws {
        let outcome = try await onLoopThread { () throws -> [String] in
            let resolver = ScriptedResolver(otherwise: ScriptedResolver.failure())
            let v4 = try NetworkReachability(host: "127.0.0.1", resolver: resolver)
            let v6 = try NetworkReachability(host: Self.nowhere, resolver: resolver)
            defer { [v4, v6].forEach { $0.invalidate() } }
            try RunLoop.current.runUntil(timeout: .milliseconds(50)) { false }
            return [v4, v6].map { "\($0.host ?? "nil") \($0.target?.description ?? "nil") \($0.path.isReachable)" }
                + ["lookups \(resolver.calls.count)"]
        }
        #expect(outcome == ["nil 127.0.0.1:0 true", "nil [fe80::1]:0 false", "lookups 0"])
    }

    @Test("failed lookups leave the path reachable and are retried after 1, 2, 4, 8, 8 s (virtual clock)")
    func failedLookupsBackOff() async throws {
        let outcome = try await onManualClockLoop { loop, _ -> ([Duration], NetworkPath, Int, Int) in
            let resolver = ScriptedResolver(otherwise: ScriptedResolver.failure())
            let reachability = try NetworkReachability(host: "chat.test", resolver: resolver)
            reachability.maximumLookupRetryDelay = .seconds(8)
            defer { reachability.invalidate() }
            var changes = 0
            reachability.onChange = { _, _ in changes += 1 }
            try loop.runUntil(timeout: .seconds(60)) { resolver.calls.count >= 6 }
            let times = resolver.callTimes
            let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
            return (gaps, reachability.path, changes, reachability.resolvedAddresses.count)
        }
        #expect(outcome.0 == [1, 2, 4, 8, 8].map { Duration.seconds($0) })
        #expect(outcome.1 == .reachable)
        #expect(outcome.2 == 0, "no onChange: nothing is known against trying")
        #expect(outcome.3 == 0)
    }

    @Test("a success after failures resets the delay; a later failure keeps the addresses and the judgement")
    func successResetsAndFailureKeeps() async throws {
        let outcome = try await onManualClockLoop { loop, _ -> [String] in
            let resolver = ScriptedResolver(
                [ScriptedResolver.failure(), ScriptedResolver.failure(), ScriptedResolver.addresses(Self.nowhere)],
                otherwise: ScriptedResolver.failure())
            let reachability = try NetworkReachability(host: "chat.test", resolver: resolver)
            defer { reachability.invalidate() }
            var notes: [String] = []
            reachability.onChange = { _, path in notes.append("changed \(path.isReachable)") }
            try loop.runUntil(timeout: .seconds(60)) { !notes.isEmpty }
            let resolvedAt = loop.now
            notes.append("lookups \(resolver.calls.count), then nothing due: \(reachability.lookupSchedule.nextLookup == nil)")
            // A settled burst of netlink messages, as after a link change.
            reachability.networkSettled()
            try loop.runUntil(timeout: .seconds(60)) { resolver.calls.count >= 5 }
            let times = resolver.callTimes
            guard times.count >= 5 else { return notes + ["only \(times.count) lookups"] }
            notes.append("after the change \(times[3] - resolvedAt), then \(times[4] - times[3])")
            notes.append("kept \(reachability.resolvedAddresses.map(\.ip)) \(reachability.path.isReachable)")
            return notes
        }
        #expect(
            outcome == [
                "changed false",
                "lookups 3, then nothing due: true",
                // The change came at once after the third start, so it waits for the spacing.
                "after the change 1.0 seconds, then 1.0 seconds",
                "kept [\"fe80::1\"] false"
            ])
    }

    @Test("changes during a lookup ask for one more after it, not one each")
    func changesDuringALookup() async throws {
        let outcome = try await onManualClockLoop { loop, clock -> (Int, Int, Duration?) in
            let resolver = ScriptedResolver()
            let reachability = try NetworkReachability(host: "chat.test", resolver: resolver)
            defer { reachability.invalidate() }
            clock.advance(by: .seconds(3))
            for _ in 0..<3 { reachability.networkSettled() }
            try loop.runUntil(timeout: .seconds(5)) { false }
            let whileHeld = resolver.calls.count
            let answered = loop.now
            resolver.answerHeld(with: ScriptedResolver.addresses("127.0.0.1"))
            try loop.runUntil(timeout: .seconds(10)) { resolver.calls.count >= 2 }
            try loop.runUntil(timeout: .seconds(10)) { false }
            let times = resolver.callTimes
            return (whileHeld, times.count, times.count > 1 ? times[1] - answered : nil)
        }
        #expect(outcome.0 == 1)
        #expect(outcome.1 == 2, "one more, not three")
        #expect(outcome.2 == .zero, "the spacing had passed: at once")
    }

    @Test("invalidated, or let go, while a lookup is out: the late answer from another thread changes nothing")
    func lateAnswer() async throws {
        let outcome = try await onLoopThread { () throws -> [String] in
            let loop = RunLoop.current
            let resolver = ScriptedResolver()
            let invalidated = try NetworkReachability(host: "chat.test", resolver: resolver)
            var calls = 0
            invalidated.onChange = { _, _ in calls += 1 }
            invalidated.invalidate()
            weak var released: NetworkReachability?
            do {
                let reachability = try NetworkReachability(host: "chat.test", resolver: resolver)
                reachability.onChange = { _, _ in calls += 1 }
                released = reachability
            }
            let answered = LockedBox(false)
            startThread {
                resolver.answerHeld(with: ScriptedResolver.addresses(Self.nowhere))
                answered.set(true)
            }
            try spin(loop, for: .seconds(10)) { answered.get() }
            try loop.runUntil(timeout: .milliseconds(50)) { false }
            return [
                "held \(resolver.calls.count)", "calls \(calls)", "released \(released == nil)",
                "path \(invalidated.path)", "resolved \(invalidated.resolvedAddresses.count)"
            ]
        }
        #expect(outcome == ["held 2", "calls 0", "released true", "path reachable", "resolved 0"])
    }

    @Test("an answer from the resolver's own thread is handled on the loop's thread")
    func answerOnTheLoopThread() async throws {
        let outcome = try await onLoopThread { () throws -> [Bool] in
            let loop = RunLoop.current
            let resolver = ScriptedResolver([ScriptedResolver.addresses(Self.nowhere)], answersFromAnotherThread: true)
            let reachability = try NetworkReachability(host: "chat.test", resolver: resolver)
            defer { reachability.invalidate() }
            var onLoopThread: [Bool] = []
            reachability.onChange = { _, _ in onLoopThread.append(loop.isCurrentThread) }
            try spin(loop, for: .seconds(10)) { !onLoopThread.isEmpty }
            return onLoopThread
        }
        #expect(outcome == [true])
    }
}
