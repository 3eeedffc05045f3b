import RunLoopTesting
import Testing

@testable import RunLoopKit

/// The timer heap's index records under random churn: after every insert, cancel, re-date and
/// invalidation, in two modes at once, each heap is in order and every timer's recorded slot points at
/// its own entry (`TimerHeap.checkInvariants()`), and each heap holds exactly the timers expected.
@Suite struct TimerHeapTests {
    @Test func indexRecordsStayConsistentUnderRandomChurn() async throws {
        let failures = try await onLoopThread { HeapChurn.run(seed: 0x5EED, steps: 4_000) }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    @Test func aLargeHeapStaysConsistent() async throws {
        // Past the size debug builds check after every mutation: checked here instead.
        let failures = try await onLoopThread { HeapChurn.run(seed: 42, steps: 3_000, prefill: 2_000) }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    @Test("a remove through the mode used last, or through another, takes the timer out of that mode alone")
    func removeLeavesTheTimersOtherModes() async throws {
        let held = try await onLoopThread { LastModeRemoval.run() }
        #expect(held == [true, false, false, true])
    }

    @Test("the wake bound is the root's deadline when it has no tolerance, else found below it")
    func wakeBoundWithAndWithoutTheRootsShortcut() async throws {
        let bounds = try await onLoopThread { WakeBound.run() }
        #expect(bounds == [0, 10, 10, 0])
    }

    @Test("a batch holds every due timer not in its callout, in firing order, whatever order the heap was filled in")
    func dueBatchIsInFiringOrder() async throws {
        let (collected, expected) = try await onLoopThread { DueBatch.run(seed: 7) }
        #expect(collected.count == expected.count)
        #expect(collected == expected)
    }
}

/// A root timer at T and a child at T + 10 ns, both without tolerance: the wake bound (less T) with the
/// root as it is, in its callout, with a tolerance of 100 ns (the child bounds the sleep), and with 5.
private enum WakeBound {
    static func run() -> [UInt64] {
        let loop = RunLoop.current
        let mode = RunLoop.Mode("wakeBound")
        let base = loop.now.nanoseconds + 3_600_000_000_000
        let root = RunLoopTimer(fireAt: LoopInstant(nanoseconds: base)) { _ in }
        let child = RunLoopTimer(fireAt: LoopInstant(nanoseconds: base + 10)) { _ in }
        defer { for timer in [root, child] { timer.invalidate() } }
        loop.add(root, forMode: mode)
        loop.add(child, forMode: mode)
        func bound() -> UInt64 { loop.lock.withLock { loop.modes[mode]!.timers.wakeDeadline() } - base }
        var bounds = [bound()]
        loop.lock.withLock { root.isInCallout = true }
        bounds.append(bound())
        loop.lock.withLock { root.isInCallout = false }
        root.tolerance = .nanoseconds(100)
        bounds.append(bound())
        root.tolerance = .nanoseconds(5)
        bounds.append(bound() - 5)
        return bounds
    }
}

/// A timer in two modes, removed from the mode used last (found without comparing mode names) and, on
/// a second timer, from the other one: whether each is still in (A, B) afterwards, timer by timer.
private enum LastModeRemoval {
    static func run() -> [Bool] {
        let loop = RunLoop.current
        let first = RunLoop.Mode("lastRemovalA"), second = RunLoop.Mode("lastRemovalB")
        let timers = (0..<2).map { _ in RunLoopTimer(after: .seconds(3_600)) { _ in } }
        defer { for timer in timers { timer.invalidate() } }
        for timer in timers {
            loop.add(timer, forMode: first)
            loop.add(timer, forMode: second)
        }
        loop.remove(timers[0], forMode: second)  // the mode used last
        loop.remove(timers[1], forMode: first)
        return timers.flatMap { timer in [first, second].map { loop.contains(timer, forMode: $0) } }
    }
}

/// Timers on 40 deadlines (many shared, so the scheduling order breaks ties) added in random order, one
/// of the due ones in its callout; the batch due at the 25th deadline, against the same set sorted.
private enum DueBatch {
    static func run(seed: UInt64) -> (collected: [ObjectIdentifier], expected: [ObjectIdentifier]) {
        let loop = RunLoop.current
        let mode = RunLoop.Mode("dueBatch")
        let base = loop.now.nanoseconds + 3_600_000_000_000
        var random = seed
        var timers: [RunLoopTimer] = []
        for _ in 0..<300 {
            random = random &* 6364136223846793005 &+ 1442695040888963407
            let step = (random >> 33) % 40
            let timer = RunLoopTimer(fireAt: LoopInstant(nanoseconds: base + step * 1_000)) { _ in }
            loop.add(timer, forMode: mode)
            timers.append(timer)
        }
        let now = base + 24 * 1_000
        defer { for timer in timers { timer.invalidate() } }
        return loop.lock.withLock {
            let inCallout = timers.first { $0.deadline <= now }!
            inCallout.isInCallout = true
            defer { inCallout.isInCallout = false }
            let expected = timers.filter { $0.deadline <= now && $0 !== inCallout }
                .sorted { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }
            var batch: [RunLoopTimer] = [], scratch: [TimerHeap.Entry] = []
            loop.modes[mode]!.timers.collectDue(at: now, into: &batch, scratch: &scratch)
            return (batch.map { ObjectIdentifier($0) }, expected.map { ObjectIdentifier($0) })
        }
    }
}

/// A static function, not a long closure: the Swift 6.3.1 compiler crashes on long `onLoopThread`
/// bodies that capture mutable locals.
private enum HeapChurn {
    static func run(seed: UInt64, steps: Int, prefill: Int = 0) -> [String] {
        let loop = RunLoop.current
        let modes = [RunLoop.Mode("heapA"), RunLoop.Mode("heapB")]
        var random = seed
        func next(_ bound: Int) -> Int {
            random = random &* 6364136223846793005 &+ 1442695040888963407
            return Int((random >> 33) % UInt64(bound))
        }
        var timers: [RunLoopTimer] = []
        var expected: [Set<ObjectIdentifier>] = [[], []]
        var failures: [String] = []
        for index in 0..<(prefill + 64) {
            timers.append(RunLoopTimer(after: .seconds(3_600 + index % 17)) { _ in })
        }
        for (index, timer) in timers.prefix(prefill).enumerated() {
            loop.add(timer, forMode: modes[index % 2])
            expected[index % 2].insert(ObjectIdentifier(timer))
        }
        for step in 0..<steps {
            let slot = prefill + next(64)
            let timer = timers[slot]
            let which = next(2)
            switch next(10) {
            case 0..<4:
                loop.add(timer, forMode: modes[which])
                if timer.isValid { expected[which].insert(ObjectIdentifier(timer)) }
            case 4..<7:
                loop.remove(timer, forMode: modes[which])
                expected[which].remove(ObjectIdentifier(timer))
            case 7..<9:
                timer.nextFireDate = loop.now + .seconds(3_600) + .milliseconds(next(1_000))
            default:
                timer.invalidate()
                for mode in 0..<2 { expected[mode].remove(ObjectIdentifier(timer)) }
                timers[slot] = RunLoopTimer(after: .seconds(3_600 + next(17))) { _ in }
            }
            // The full check is O(n): every step on a heap of thousands made this test take 6 s in
            // debug builds (and far longer under the thread sanitizer); the counts are checked every step.
            let checksOrder = prefill < 256 || step % 64 == 63 || step == steps - 1
            for (index, mode) in modes.enumerated() {
                let (consistent, count) = loop.lock.withLock { () -> (Bool, Int) in
                    guard let heap = loop.modes[mode]?.timers else { return (true, 0) }
                    return (!checksOrder || heap.checkInvariants(), heap.count)
                }
                if !consistent { failures.append("step \(step): heap \(mode) inconsistent") }
                if count != expected[index].count {
                    failures.append("step \(step): heap \(mode) holds \(count), expected \(expected[index].count)")
                }
            }
        }
        for timer in timers { timer.invalidate() }
        return failures
    }
}

/// The timer keeps its interval as nanoseconds (the exact value boxed only when that loses something):
/// the public `interval` still reads back exactly what was given.
@Suite struct TimerIntervalStorageTests {
    @Test func intervalReadsBackExactly() {
        let cases: [Duration] = [
            .milliseconds(5), .seconds(86_400), .nanoseconds(1), Duration(secondsComponent: 0, attosecondsComponent: 1_500_000_000),
            .seconds(Int64.max)
        ]
        for interval in cases {
            #expect(RunLoopTimer(after: .zero, repeating: interval) { _ in }.interval == interval)
        }
        #expect(RunLoopTimer(after: .zero) { _ in }.interval == nil)
        #expect(RunLoopTimer(after: .zero, repeating: .zero) { _ in }.interval == nil)
        #expect(RunLoopTimer(after: .zero, repeating: .seconds(-1)) { _ in }.interval == nil)
        #expect(RunLoopTimer(after: .zero, repeating: Duration(secondsComponent: 0, attosecondsComponent: 5)) { _ in }.interval == nil)
    }
}
