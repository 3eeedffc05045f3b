import RunLoopTesting
import Testing

@testable import RunLoopKit

/// The heap's order against a reference model: random adds, removes, re-dates and removals of the
/// earliest timer, on deadlines drawn from a few values (so ties are common), in two modes with
/// timers shared between them. Every time the earliest is taken it must be the model's earliest, and
/// draining each heap at the end must give the model's timers sorted by (deadline, scheduling order).
/// Ties go in scheduling order: an add to a timer in no mode, or a re-date of a scheduled one, puts it
/// behind every timer already there with the same deadline.
@Suite struct TimerHeapOrderTests {
    /// Under a sanitizer 1,500 steps of churn instead of 5,000, on each of the three heap depths: the
    /// model's scan for the earliest at every step is what costs, not the heap's paths.
    @Test(arguments: [(UInt64(1), 40), (2, 400), (3, 1_500)])
    func earliestAndDrainOrderMatchASortedReference(seed: UInt64, population: Int) async throws {
        let steps = scaledUnderSanitizers(plain: 5_000, sanitized: 1_500)
        let failures = try await onLoopThread { HeapOrderModel.run(seed: seed, population: population, steps: steps) }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    /// The same through the loop: after random churn, a manual clock past every deadline and one run
    /// fires the mode's timers in the reference's order.
    @Test func firingOrderMatchesASortedReference() async throws {
        let (fired, expected) = try await onManualClockLoop { loop, clock in
            try HeapOrderModel.fire(loop: loop, clock: clock, seed: 9, population: 300, steps: 2_000)
        }
        #expect(fired.count == expected.count)
        #expect(fired == expected)
    }
}

/// Static functions, not long closures: the Swift 6.3.1 compiler crashes on long `onLoopThread`
/// bodies that capture mutable locals.
private struct HeapOrderModel {
    let loop: RunLoop
    let modes = [RunLoop.Mode("orderA"), RunLoop.Mode("orderB")]
    let base: UInt64
    var timers: [RunLoopTimer] = []
    var deadline: [UInt64] = []
    /// The model's scheduling order per timer (a counter, not the loop's own sequence).
    var order: [UInt64] = []
    var inMode: [[Bool]] = []
    var counter: UInt64 = 0
    var random: UInt64

    init(loop: RunLoop, seed: UInt64, population: Int) {
        self.loop = loop
        self.random = seed
        base = loop.now.nanoseconds + 3_600_000_000_000
        for _ in 0..<population {
            timers.append(RunLoopTimer(fireAt: LoopInstant(nanoseconds: base)) { _ in })
            deadline.append(base)
            order.append(0)
            inMode.append([false, false])
        }
    }

    mutating func next(_ bound: Int) -> Int {
        random = random &* 6364136223846793005 &+ 1442695040888963407
        return Int((random >> 33) % UInt64(bound))
    }

    /// A deadline among 25 values a microsecond apart: ties on most of them.
    mutating func nextDeadline() -> UInt64 { base + UInt64(next(25)) * 1_000 }

    func isScheduled(_ index: Int) -> Bool { inMode[index][0] || inMode[index][1] }

    mutating func add(_ index: Int, to which: Int) {
        if inMode[index][which] { return }
        if !isScheduled(index) {
            order[index] = counter
            counter += 1
        }
        inMode[index][which] = true
        loop.add(timers[index], forMode: modes[which])
    }

    mutating func remove(_ index: Int, from which: Int) {
        inMode[index][which] = false
        loop.remove(timers[index], forMode: modes[which])
    }

    mutating func redate(_ index: Int) {
        let date = nextDeadline()
        deadline[index] = date
        if isScheduled(index) {
            order[index] = counter
            counter += 1
        }
        timers[index].nextFireDate = LoopInstant(nanoseconds: date)
    }

    func precedes(_ a: Int, _ b: Int) -> Bool { (deadline[a], order[a]) < (deadline[b], order[b]) }

    /// The model's timers of a mode, earliest first.
    func sorted(_ which: Int) -> [Int] { timers.indices.filter { inMode[$0][which] }.sorted(by: precedes) }

    /// The model's earliest timer of a mode (a scan: sorting at every step made the test slow).
    func earliest(_ which: Int) -> Int? { timers.indices.filter { inMode[$0][which] }.min(by: precedes) }

    func heapEarliest(_ which: Int) -> RunLoopTimer? {
        loop.lock.withLock { loop.modes[modes[which]]?.timers.earliest }
    }

    /// One random step; a failure description if the heap's earliest disagreed with the model.
    mutating func step() -> String? {
        let index = next(timers.count)
        let which = next(2)
        switch next(10) {
        case 0..<4: add(index, to: which)
        case 4..<6: remove(index, from: which)
        case 6..<8: redate(index)
        default:
            guard let expected = earliest(which) else { return nil }
            let earliest = heapEarliest(which)
            guard earliest === timers[expected] else { return "earliest of mode \(which) is not the model's" }
            remove(expected, from: which)
        }
        return nil
    }

    static func run(seed: UInt64, population: Int, steps: Int) -> [String] {
        var model = HeapOrderModel(loop: RunLoop.current, seed: seed, population: population)
        // Start with most timers scheduled, so the heap is several levels deep.
        for index in 0..<population {
            model.deadline[index] = model.nextDeadline()
            model.timers[index].nextFireDate = LoopInstant(nanoseconds: model.deadline[index])
            model.add(index, to: index % 3 == 0 ? 1 : 0)
        }
        var failures: [String] = []
        for step in 0..<steps {
            if let failure = model.step() { failures.append("step \(step): \(failure)") }
        }
        for which in 0..<2 {
            let consistent = model.loop.lock.withLock { model.loop.modes[model.modes[which]]?.timers.checkInvariants() ?? true }
            if !consistent { failures.append("heap \(which) inconsistent after the churn") }
            // Drain: each earliest in turn must be the reference's next.
            for (position, expected) in model.sorted(which).enumerated() {
                guard model.heapEarliest(which) === model.timers[expected] else {
                    failures.append("drain of mode \(which): position \(position) differs")
                    break
                }
                model.remove(expected, from: which)
            }
            if model.heapEarliest(which) != nil { failures.append("mode \(which) not empty after the drain") }
        }
        for timer in model.timers { timer.invalidate() }
        return failures
    }

    /// Churns, then fires mode A once every deadline has passed; returns the firing order and the
    /// reference's, as indices.
    static func fire(loop: RunLoop, clock: ManualClock, seed: UInt64, population: Int, steps: Int) throws -> ([Int], [Int]) {
        var model = HeapOrderModel(loop: loop, seed: seed, population: population)
        let fired = LockedBox<[Int]>([])
        for index in 0..<population {
            model.timers[index] = RunLoopTimer(fireAt: LoopInstant(nanoseconds: model.base)) { _ in
                fired.update { $0.append(index) }
            }
            model.deadline[index] = model.nextDeadline()
            model.timers[index].nextFireDate = LoopInstant(nanoseconds: model.deadline[index])
            model.add(index, to: index % 3 == 0 ? 1 : 0)
        }
        for _ in 0..<steps { _ = model.step() }
        let expected = model.sorted(0)
        clock.advance(to: LoopInstant(nanoseconds: model.base + 1_000_000))
        try loop.run(model.modes[0], timeout: .zero)
        for timer in model.timers { timer.invalidate() }
        return (fired.get(), expected)
    }
}
