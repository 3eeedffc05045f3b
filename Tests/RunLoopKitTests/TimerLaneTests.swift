import RunLoopTesting
import Testing

@testable import RunLoopKit

/// The lane beside the heap (`TimerQueue`): O(1) for timers that order after the last one appended, and
/// exactly the heap's order — (deadline, scheduling sequence) — for everything it answers.
@Suite struct TimerLaneTests {
    /// Two queues fed the same random operations, one with the lane and one with the heap alone: the
    /// earliest timer, every due batch, the sole due timer, the wake bound and the count agree at every
    /// step. Phases fill the lane in order (a burst), churn it (cancels from the middle, re-dates of
    /// timers in it, deadlines before and after its back), and drain it (it empties and refills).
    /// Under a sanitizer one seed: each seed's run goes through every path (the counts below say so),
    /// and the others only repeat them for the sanitizer (a minute of the thread sanitizer's CI run).
    @Test(arguments: scaledUnderSanitizers(plain: [UInt64(1), 2, 3], sanitized: [1]))
    func answersLikeTheHeapAlone(seed: UInt64) async throws {
        let report = try await onLoopThread { LaneDifferential.run(seed: seed, steps: 6_000) }
        #expect(report.failures.isEmpty, "\(report.failures.prefix(5))")
        // The workload went through the lane's paths, not only the heap's.
        #expect(report.peakLane > 100)
        #expect(report.refills >= 3)
        #expect(report.redatedInLane > 50)
        #expect(report.middleCancels > 50)
        #expect(report.packs > 0)
    }

    /// Through the loop on the manual clock: zero-delay bursts (one deadline: the scheduling order
    /// decides), timers on later deadlines, cancels and re-dates of timers in the lane, three rounds
    /// (the lane empties between them) — the firing order is the reference's, sorted by (deadline,
    /// scheduling order).
    @Test func firingOrderMatchesTheReference() async throws {
        let rounds = try await onManualClockLoop { loop, clock in try LaneFiring.run(loop: loop, clock: clock, seed: 11) }
        for round in rounds {
            #expect(round.laneHeld > 50)
            #expect(round.fired.count == round.expected.count)
            #expect(round.fired == round.expected)
        }
    }

    /// A timer an hour out holds the lane's front while timeouts behind it are re-armed 5,000 times:
    /// each re-arm leaves a tombstone, and the lane packs itself, so its ring spans at most twice its
    /// timers plus 16 slots instead of growing with every re-arm.
    @Test func reArmsBehindALongTimerKeepTheRingSmall() async throws {
        let (widest, consistent) = try await onManualClockLoop { loop, _ in LaneTombstones.run(loop: loop) }
        #expect(consistent)
        #expect(widest <= 2 * 11 + 16)
    }
}

// Static functions, not long closures: the Swift 6.3.1 compiler crashes on long `onLoopThread` bodies
// that capture mutable locals.

/// What the differential run saw.
private struct LaneReport: Sendable {
    var failures: [String] = []
    var peakLane = 0
    var refills = 0
    var redatedInLane = 0
    var middleCancels = 0
    var packs = 0
}

private struct LaneDifferential {
    let withLane: TimerQueue
    let heapAlone: TimerQueue
    let stores: [ModeStore]
    var random: UInt64
    var scheduled: [RunLoopTimer] = []
    /// Even: each new key takes the next; odd ones are left for `insertStale`, each used once.
    var sequence: UInt64 = 0
    var staleUsed = Set<UInt64>()
    /// Grows with every burst insert: the deadlines a burst of timers gets.
    var now: UInt64 = 1_000_000_000
    var report = LaneReport()
    var laneWasEmptied = false

    mutating func next(_ bound: Int) -> Int {
        random = random &* 6364136223846793005 &+ 1442695040888963407
        return Int((random >> 33) % UInt64(bound))
    }

    /// A burst deadline (not before the previous one: ties are common), or a random one mostly before
    /// it (the heap's) and now and then past it (taken by the lane, and a bar to the next burst).
    mutating func nextDeadline(burst: Bool) -> UInt64 {
        if burst {
            now += UInt64(next(3))
            return now
        }
        return next(10) == 0 ? now + UInt64(next(100)) : now - UInt64(next(400))
    }

    mutating func insert(burst: Bool) {
        let timer = RunLoopTimer(after: .zero) { _ in }
        timer.deadline = nextDeadline(burst: burst)
        timer.sequence = sequence
        sequence += 2
        add(timer)
    }

    /// A timer on the latest burst deadline (often the lane's back) whose sequence is older than the
    /// timers there, as a timer scheduled in another mode earlier keeps its sequence when added to
    /// this one: it orders before them, so it may not join the lane's back.
    mutating func insertStale() {
        guard sequence >= 2 else { return }
        let stale = sequence - 1 - 2 * UInt64(next(min(20, Int(sequence / 2))))
        guard !staleUsed.contains(stale) else { return }
        staleUsed.insert(stale)
        let timer = RunLoopTimer(after: .zero) { _ in }
        timer.deadline = now
        timer.sequence = stale
        add(timer)
    }

    mutating func add(_ timer: RunLoopTimer) {
        timer.toleranceNanoseconds = next(8) == 0 ? UInt64(next(50)) : 0
        withLane.insert(timer, store: stores[0])
        heapAlone.insert(timer, store: stores[1])
        scheduled.append(timer)
    }

    mutating func cancel(_ slot: Int) {
        let timer = scheduled.remove(at: slot)
        if isInLane(timer) && timer !== withLane.earliest { report.middleCancels += 1 }
        withLane.remove(timer)
        heapAlone.remove(timer)
    }

    mutating func redate(_ slot: Int, burst: Bool) {
        let timer = scheduled[slot]
        if isInLane(timer) { report.redatedInLane += 1 }
        timer.deadline = nextDeadline(burst: burst)
        timer.sequence = sequence
        sequence += 2
        withLane.reposition(timer)
        heapAlone.reposition(timer)
    }

    /// Out and back in with its key unchanged, as a timer scheduled in another mode keeps its sequence
    /// when added to this one: on a tie it may order before the lane's back.
    mutating func reinsert(_ slot: Int) {
        let timer = scheduled[slot]
        withLane.remove(timer)
        heapAlone.remove(timer)
        withLane.insert(timer, store: stores[0])
        heapAlone.insert(timer, store: stores[1])
    }

    mutating func popEarliest() {
        guard let earliest = heapAlone.earliest else { return }
        if withLane.earliest !== earliest { report.failures.append("earliest differs") }
        cancel(scheduled.firstIndex { $0 === earliest }!)
    }

    func isInLane(_ timer: RunLoopTimer) -> Bool { (timer.heapIndex(in: withLane.owner) ?? 0) < 0 }

    /// One step of the phase: 0 fills in order, 1 churns, 2 thins (cancels, most from the lane's
    /// middle, until tombstones outnumber its timers), 3 drains.
    mutating func step(phase: Int) {
        let roll = next(100)
        switch phase {
        case 0:
            if roll < 5 {
                insertStale()
            } else if roll < 70 || scheduled.isEmpty {
                insert(burst: roll < 60)
            } else if roll < 85 {
                cancel(next(scheduled.count))
            } else {
                redate(next(scheduled.count), burst: true)
            }
        case 1:
            if roll < 5 {
                insertStale()
            } else if scheduled.isEmpty || roll < 30 {
                insert(burst: roll < 15)
            } else if roll < 55 {
                cancel(next(scheduled.count))
            } else if roll < 75 {
                redate(next(scheduled.count), burst: roll < 65)
            } else if roll < 82 {
                reinsert(next(scheduled.count))
            } else {
                popEarliest()
            }
        case 2:
            if scheduled.isEmpty || roll < 25 { insert(burst: true) } else { cancel(next(scheduled.count)) }
        default:
            if roll < 10 { insert(burst: true) } else { popEarliest() }
        }
    }

    /// The two queues' answers at this step, compared.
    mutating func compare(step: Int) {
        func fail(_ what: String) { report.failures.append("step \(step): \(what)") }
        if !withLane.checkInvariants() { fail("lane queue inconsistent") }
        if !heapAlone.checkInvariants() { fail("heap inconsistent") }
        if withLane.count != heapAlone.count { fail("counts \(withLane.count) and \(heapAlone.count)") }
        if withLane.earliest !== heapAlone.earliest { fail("earliest differs") }
        if withLane.earliestDeadline != heapAlone.earliestDeadline { fail("earliest deadline differs") }
        if withLane.wakeDeadline() != heapAlone.wakeDeadline() { fail("wake bound differs") }
        let instant = now - 300 + UInt64(next(600))
        // One timer in its callout now and then: a batch leaves it out, and it bounds no wake-up.
        let inCallout = scheduled.isEmpty || next(4) != 0 ? nil : scheduled[next(scheduled.count)]
        inCallout?.isInCallout = true
        defer { inCallout?.isInCallout = false }
        if withLane.wakeDeadline() != heapAlone.wakeDeadline() { fail("wake bound with a callout differs") }
        var laneBatch: [RunLoopTimer] = [], heapBatch: [RunLoopTimer] = [], scratch: [TimerHeap.Entry] = []
        withLane.collectDue(at: instant, into: &laneBatch, scratch: &scratch)
        heapAlone.collectDue(at: instant, into: &heapBatch, scratch: &scratch)
        if laneBatch.map(ObjectIdentifier.init) != heapBatch.map(ObjectIdentifier.init) { fail("due batch differs") }
        // The queue may decline the sole-timer shortcut (a due tombstone next), never answer wrongly.
        let sole = heapAlone.soleDue(at: instant)
        if let laneSole = withLane.soleDue(at: instant), laneSole !== sole { fail("sole due timer differs") }
        if sole == nil && withLane.soleDue(at: instant) != nil { fail("sole due timer where there is none") }
    }

    mutating func track() {
        report.peakLane = max(report.peakLane, withLane.laneCount)
        if withLane.laneCount == 0 { laneWasEmptied = true }
        if laneWasEmptied && withLane.laneCount > 0 {
            report.refills += 1
            laneWasEmptied = false
        }
        report.packs = withLane.lanePacks
    }

    static func run(seed: UInt64, steps: Int) -> LaneReport {
        let loop = RunLoop.current
        let modes = [RunLoop.Mode("laneDiffA"), RunLoop.Mode("laneDiffB")]
        // The queues record memberships by store: two real stores give the two queues their owners.
        let placeholders = modes.map { mode in
            let timer = RunLoopTimer(after: .seconds(86_400)) { _ in }
            loop.add(timer, forMode: mode)
            return timer
        }
        defer { for timer in placeholders { timer.invalidate() } }
        return loop.lock.withLock {
            let stores = modes.map { loop.modes[$0]! }
            var run = LaneDifferential(
                withLane: TimerQueue(owner: ObjectIdentifier(stores[0])),
                heapAlone: TimerQueue(owner: ObjectIdentifier(stores[1]), usesLane: false),
                stores: stores, random: seed)
            for step in 0..<steps {
                run.step(phase: (step / 400) % 4)
                run.track()
                run.compare(step: step)
            }
            while let timer = run.scheduled.popLast() {
                run.withLane.remove(timer)
                run.heapAlone.remove(timer)
            }
            return run.report
        }
    }
}

/// One round of the loop-level check: what fired, what the reference expects (indices), and how many
/// timers the lane held before the run.
private struct LaneRound: Sendable {
    var fired: [Int]
    var expected: [Int]
    var laneHeld: Int
}

private enum LaneFiring {
    static func run(loop: RunLoop, clock: ManualClock, seed: UInt64) throws -> [LaneRound] {
        let mode = RunLoop.Mode("laneFiring")
        var random = seed
        func next(_ bound: Int) -> Int {
            random = random &* 6364136223846793005 &+ 1442695040888963407
            return Int((random >> 33) % UInt64(bound))
        }
        var rounds: [LaneRound] = []
        var order = 0
        for _ in 0..<3 {
            let fired = LockedBox<[Int]>([])
            let start = loop.now
            var timers: [RunLoopTimer] = []
            var keys: [(deadline: UInt64, order: Int)] = []
            for index in 0..<300 {
                let callback: (RunLoopTimer) -> Void = { _ in fired.update { $0.append(index) } }
                // A burst on one deadline (zero delay), then zero delays and a few microseconds out,
                // in random order.
                let delay = index >= 150 && next(2) == 0 ? Duration.microseconds(next(20)) : .zero
                let timer = RunLoopTimer(after: delay, callback)
                loop.add(timer, forMode: mode)
                timers.append(timer)
                keys.append(((start + delay).nanoseconds, order))
                order += 1
            }
            var cancelled = Set<Int>()
            for _ in 0..<40 {
                let index = next(timers.count)
                timers[index].invalidate()
                cancelled.insert(index)
            }
            for _ in 0..<40 {
                let index = next(timers.count)
                let date = start + .microseconds(next(25))
                timers[index].nextFireDate = date
                keys[index] = (date.nanoseconds, order)
                order += 1
            }
            let laneHeld = loop.lock.withLock { loop.modes[mode]!.timers.laneCount }
            let expected = keys.indices.filter { !cancelled.contains($0) }.sorted { keys[$0] < keys[$1] }
            clock.advance(to: start + .milliseconds(1))
            try loop.run(mode, timeout: .zero)
            for timer in timers { timer.invalidate() }
            rounds.append(LaneRound(fired: fired.get(), expected: expected, laneHeld: laneHeld))
        }
        return rounds
    }
}

private enum LaneTombstones {
    /// The widest the ring got, and whether the queue stayed consistent.
    static func run(loop: RunLoop) -> (Int, Bool) {
        let mode = RunLoop.Mode("laneTombstones")
        let start = loop.now
        let long = RunLoopTimer(fireAt: start + .seconds(3_600)) { _ in }
        loop.add(long, forMode: mode)
        let timeouts = (0..<10).map { index in RunLoopTimer(fireAt: start + .seconds(3_601 + index)) { _ in } }
        for timer in timeouts { loop.add(timer, forMode: mode) }
        var widest = 0
        var consistent = true
        for rearm in 0..<5_000 {
            timeouts[rearm % 10].nextFireDate = start + .seconds(3_700) + .milliseconds(rearm)
            let (span, held, valid) = loop.lock.withLock {
                let timers = loop.modes[mode]!.timers
                return (timers.laneSpan, timers.laneCount, rearm % 500 == 0 ? timers.checkInvariants() : true)
            }
            widest = max(widest, span)
            consistent = consistent && valid && held == 11
        }
        for timer in [long] + timeouts { timer.invalidate() }
        return (widest, consistent)
    }
}
