import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// The sessions' deadline queue keeps a FIFO lane beside its heap (issue 22, "Idle CPU"): a heartbeat's
/// renewal, pushed back in due order at one keepalive's distance, is appended and taken in O(1) instead
/// of a pop and a push over the heap's levels. The lane must change nothing but the cost: every answer
/// is the heap alone's.
@Suite("Session deadlines: the lane beside the heap")
struct SessionDeadlineLaneTests {
    /// Two queues fed the same random entries — renewals at one distance (some a little early: a
    /// heartbeat's jitter), deadlines moved earlier, longer ones that hold the lane's back, ties, an
    /// order count that wraps — and drained at random instants, sometimes rebuilt without some
    /// entries: the lane's queue gives the same entries in the same order as the heap alone. Under a
    /// sanitizer one seed, as below: each seed's run takes every path (the counts say so).
    @Test(arguments: scaledUnderSanitizers(plain: [UInt64(1), 2, 3], sanitized: [1]))
    func queueAnswersLikeTheHeapAlone(seed: UInt64) {
        let report = QueueDifferential.run(seed: seed, steps: 20_000)
        #expect(report.failures.isEmpty, "\(report.failures.prefix(5))")
        // The workload went through the lane, the heap beside it, and the lane emptying and refilling.
        #expect(report.peakLane > 100)
        #expect(report.peakHeap > 20)
        #expect(report.laneRefills >= 3)
        #expect(report.rebuilds > 5)
    }

    /// Two servers on one manual-clock loop, one with the lane and one with the heap alone, fed the same
    /// random script: logins with mixed keepalives (deadlines moved earlier and later than the login
    /// deadline), some at the same instant (ties), connections that never log in, heartbeats, logouts
    /// (places reused by later sessions). Each session ends at the same instant, in the same order and
    /// for the same reason on both.
    @Test(arguments: scaledUnderSanitizers(plain: [UInt64(5), 6], sanitized: [5]))
    func sessionsToldAsWithTheHeapAlone(seed: UInt64) async throws {
        let result = try await onManualClockLoop { loop, clock in try ServerDifferential.run(loop: loop, clock: clock, seed: seed) }
        #expect(result.withLane.count == result.sessions)
        #expect(result.withLane == result.heapAlone)
        #expect(result.keepaliveEnds > 20)
        #expect(result.loginTimeouts > 0)
        #expect(result.peakLane > 5)
        #expect(result.heapAlonePeakLane == 0)
    }

    /// A crowd on one keepalive, each heartbeating at its own phase: once the login deadlines have
    /// passed, every renewal is in the lane and the heap is empty.
    @Test func steadyHeartbeatsLiveInTheLane() async throws {
        try await onManualClockLoop { loop, clock in
            let server = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let start = clock.now
            // 40 sessions 237 ms apart (several in one 250 ms tick), heartbeating every 10 s.
            let phases = (0..<40).map { Duration.milliseconds(237 * $0) }
            var peers: [MemoryLinkPeer] = []
            for (index, phase) in phases.enumerated() {
                try runManualClock(loop, clock, to: start + phase)
                peers.append(logInSilently("p\(index)", keepalive: 10, to: server, on: loop))
            }
            let deadlines = try #require(server.deadlinesByModes.values.first)
            for round in 1...6 {
                for (index, phase) in phases.enumerated() {
                    try runManualClock(loop, clock, to: start + phase + .seconds(10 * round))
                    peers[index].send(IMFrame(command: .heartbeat, serial: UInt32(round + 1)))
                }
                if round >= 4 {
                    #expect(deadlines.entryCount == 40)
                    #expect(deadlines.laneCount == 40)
                }
            }
            #expect(peers.allSatisfy { $0.isOpen })
            server.shutdown()
        }
    }
}

// Static functions and classes, not long closures: the Swift 6.3.1 compiler crashes on long
// `onLoopThread` bodies that capture mutable locals.

private struct SeededRandom {
    var state: UInt64

    mutating func next(_ bound: Int) -> Int {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Int((state >> 33) % UInt64(bound))
    }
}

private struct QueueReport {
    var failures: [String] = []
    var peakLane = 0
    var peakHeap = 0
    var laneRefills = 0
    var rebuilds = 0
}

private enum QueueDifferential {
    typealias Entry = SessionDeadlines.Entry

    static func run(seed: UInt64, steps: Int) -> QueueReport {
        var withLane = SessionDeadlines.Queue()
        var heapAlone = SessionDeadlines.Queue(usesLane: false)
        var random = SeededRandom(state: seed)
        var report = QueueReport()
        var now: UInt64 = 1_000_000_000_000
        // Starts near the wrap: ties after it are told in the other order, by both alike.
        var order = UInt32.max - 500
        let keepalive: UInt64 = 15_000_000_000
        var laneWasEmpty = true
        for step in 0..<steps {
            // Now and then nothing is added for a while: the lane drains, then refills.
            let draining = step % 2_500 >= 2_200
            for _ in 0..<(draining ? 0 : random.next(8)) {
                let at: UInt64
                switch random.next(200) {
                case 0..<120: at = now + keepalive
                case 120..<150: at = now + keepalive - UInt64(random.next(5_000_000))
                case 150..<170: at = now + UInt64(random.next(6_000)) * 1_000_000
                case 170: at = now + 2 * keepalive
                default: at = now
                }
                let entry = Entry(at: LoopInstant(nanoseconds: at), order: order, place: UInt32(random.next(64)))
                order &+= 1
                withLane.insert(entry)
                heapAlone.insert(entry)
            }
            if random.next(500) == 0 {
                let dropped = UInt32(random.next(3))
                withLane.keep { $0.order % 3 != dropped }
                heapAlone.keep { $0.order % 3 != dropped }
                report.rebuilds += 1
            }
            report.peakLane = max(report.peakLane, withLane.laneCount)
            report.peakHeap = max(report.peakHeap, withLane.count - withLane.laneCount)
            now += UInt64(random.next(300)) * 1_000_000
            if withLane.first != heapAlone.first || withLane.count != heapAlone.count {
                report.failures.append("step \(step): first \(String(describing: withLane.first)) against \(String(describing: heapAlone.first))")
            }
            while true {
                let taken = withLane.removeFirst(dueBy: LoopInstant(nanoseconds: now))
                let expected = heapAlone.removeFirst(dueBy: LoopInstant(nanoseconds: now))
                guard taken == expected, taken?.place == expected?.place else {
                    report.failures.append("step \(step): took \(String(describing: taken)), heap alone \(String(describing: expected))")
                    break
                }
                if taken == nil { break }
            }
            if withLane.laneCount == 0 {
                laneWasEmpty = true
            } else if laneWasEmpty {
                laneWasEmpty = false
                report.laneRefills += 1
            }
        }
        return report
    }
}

private struct ServerResult: Sendable {
    /// Each session's end: user, nanoseconds since the start, reason — in the order told.
    var withLane: [String] = []
    var heapAlone: [String] = []
    var sessions = 0
    var keepaliveEnds = 0
    var loginTimeouts = 0
    var peakLane = 0
    var heapAlonePeakLane = 0
}

private final class ServerDifferential {
    let loop: RunLoop
    let clock: ManualClock
    let start: LoopInstant
    let servers: [IMServer]
    var ends: [[String]] = [[], []]
    /// Per session, its two clients (lane, heap alone) and the next heartbeat's serial.
    var pairs: [(peers: [MemoryLinkPeer], serial: UInt32)] = []
    var random: SeededRandom

    init(loop: RunLoop, clock: ManualClock, seed: UInt64) {
        self.loop = loop
        self.clock = clock
        start = clock.now
        random = SeededRandom(state: seed)
        servers = [
            IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits), IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
        ]
        // Made before any session asks for its modes' deadlines, which then finds this one.
        servers[1].deadlinesByModes[[.common]] = SessionDeadlines(loop: loop, modes: [.common], usesLane: false)
        for (index, server) in servers.enumerated() {
            server.onSessionEnd = { [unowned self] _, session, reason in
                self.ends[index].append("\(session.user ?? "-") \((self.clock.now - self.start)) \(reason)")
            }
        }
    }

    static func run(loop: RunLoop, clock: ManualClock, seed: UInt64) throws -> ServerResult {
        let script = ServerDifferential(loop: loop, clock: clock, seed: seed)
        return try script.play(steps: 1_500)
    }

    func play(steps: Int) throws -> ServerResult {
        var result = ServerResult()
        let pauses: [Duration] = [.zero, .zero, .milliseconds(1), .milliseconds(50), .milliseconds(250), .milliseconds(700), .seconds(3)]
        for _ in 0..<steps {
            let roll = random.next(100)
            if roll < 14 {
                let keepalive = [10, 10, 10, 10, 4, 20][random.next(6)]
                let user = "u\(pairs.count)"
                pairs.append((servers.map { logInSilently(user, keepalive: keepalive, to: $0, on: loop) }, 2))
            } else if roll < 16 {
                // Never logs in: told at its login deadline.
                pairs.append(
                    (
                        servers.map { server -> MemoryLinkPeer in
                            let peer = MemoryLinkPeer(loop: loop)
                            server.adopt(peer.serverEnd)
                            return peer
                        }, 1
                    ))
            } else if roll < 70, let index = openSession() {
                for peer in pairs[index].peers { peer.send(IMFrame(command: .heartbeat, serial: pairs[index].serial)) }
                pairs[index].serial += 1
            } else if roll < 76, let index = openSession() {
                for peer in pairs[index].peers { peer.send(IMFrame(command: .logout, serial: pairs[index].serial)) }
            }
            try runManualClock(loop, clock, to: clock.now + pauses[random.next(pauses.count)])
            result.peakLane = max(result.peakLane, servers[0].deadlinesByModes[[.common]]?.laneCount ?? 0)
            result.heapAlonePeakLane = max(result.heapAlonePeakLane, servers[1].deadlinesByModes[[.common]]?.laneCount ?? 0)
        }
        try runManualClock(loop, clock, to: clock.now + .seconds(200))
        result.withLane = ends[0]
        result.heapAlone = ends[1]
        result.sessions = pairs.count
        result.keepaliveEnds = ends[0].filter { $0.hasSuffix("(keepalive expired)") }.count
        result.loginTimeouts = ends[0].filter { $0.hasSuffix("login timed out") }.count
        for server in servers { server.shutdown() }
        return result
    }

    /// A logged-in session still open on the lane's server, picked at random.
    private func openSession() -> Int? {
        let open = pairs.indices.filter { pairs[$0].serial > 1 && pairs[$0].peers[0].isOpen }
        return open.isEmpty ? nil : open[random.next(open.count)]
    }
}
