import Dispatch
import Glibc
import RunLoopTesting
import Synchronization
import Testing

@testable import RunLoopKit

/// A timer's fire date set on one thread while another adds the timer: before the first schedule the
/// date is kept under the timer's own lock, after it under the loop's, and the switch between the two
/// must not let the add read half of a write.
@Suite struct TimerRaceTests {
    @Test func aFireDateSetWhileAnotherThreadAddsTheTimerIsKept() async throws {
        let (kept, consistent) = try await onLoopThread { () -> (Int, Bool) in
            let loop = RunLoop.current
            let mode = RunLoop.Mode("race")
            let date = loop.now + .seconds(3_600)
            let timers = (0..<10_000).map { _ in RunLoopTimer(after: .seconds(10)) { _ in } }
            let turn = Atomic<Int>(-1)
            let setter = DispatchSemaphore(value: 0)
            let shared = TimerList(timers)
            DispatchQueue.global().async {
                for index in shared.timers.indices {
                    while turn.load(ordering: .acquiring) < index {}
                    shared.timers[index].nextFireDate = date
                }
                setter.signal()
            }
            for index in timers.indices {
                turn.store(index, ordering: .releasing)
                loop.add(timers[index], forMode: mode)
            }
            setter.wait()
            // Either order ends with the date: set first, the add schedules it; added first, setting
            // re-dates it. A delay read as a date (or a date written beside the heap's copy) would not.
            let kept = timers.filter { $0.nextFireDate == date }.count
            let consistent = loop.lock.withLock { loop.modes[mode]!.timers.checkInvariants() }
            for timer in timers { timer.invalidate() }
            return (kept, consistent)
        }
        #expect(kept == 10_000)
        #expect(consistent)
    }

    /// Two loops add the same timers at the same time: each timer's claim is won by exactly one loop,
    /// which has it scheduled and is the one `runLoop` names, read while the other loop still races.
    @Test func twoLoopsAddingTheSameTimersEachTimerGoesToOne() async throws {
        let shared = TimerList((0..<2_000).map { _ in RunLoopTimer(after: .seconds(3_600)) { _ in } })
        let arrived = Atomic<Int>(0)
        let added = Atomic<Int>(0)
        let counted = Atomic<Int>(0)
        let race: @Sendable () -> (scheduled: [Bool], named: [Bool], unclaimedSeen: Int) = {
            let loop = RunLoop.current
            let mode = RunLoop.Mode("race")
            Self.meet(at: arrived)
            var unclaimedSeen = 0
            for timer in shared.timers {
                loop.add(timer, forMode: mode)
                if timer.runLoop == nil { unclaimedSeen += 1 }
            }
            Self.meet(at: added)
            let scheduled = shared.timers.map { loop.contains($0, forMode: mode) }
            let named = shared.timers.map { $0.runLoop === loop }
            // Neither thread ends (and tears its loop down, releasing its claims) before both counted.
            Self.meet(at: counted)
            return (scheduled, named, unclaimedSeen)
        }
        let results = try await onLoopThreads([race, race])
        let (first, second) = (results[0], results[1])
        #expect(first.unclaimedSeen == 0 && second.unclaimedSeen == 0)
        // Counts rather than the arrays: a failure then reads as how many timers went wrong.
        let inBothOrNeither = zip(first.scheduled, second.scheduled).filter { $0 == $1 }.count
        let misnamed =
            zip(first.named, first.scheduled).filter { $0 != $1 }.count
            + zip(second.named, second.scheduled).filter { $0 != $1 }.count
        #expect(inBothOrNeither == 0)
        #expect(misnamed == 0)
    }

    /// The race above adds thousands of timers another loop holds: each loop logs the first of them
    /// only, where it wrote a warning per add (2,000 lines in the test log).
    @Test func aForeignTimerIsLoggedOncePerLoop() async throws {
        let shared = TimerList([RunLoopTimer(after: .seconds(3_600)) { _ in }])
        let held = Atomic<Int>(0)
        let checked = Atomic<Int>(0)
        let holder: @Sendable () -> [Bool] = {
            let loop = RunLoop.current
            loop.add(shared.timers[0], forMode: .default)
            Self.meet(at: held)
            // The holder's loop stays (and keeps its claim) until the other one has looked.
            Self.meet(at: checked)
            return [loop.loggedForeignItem.load(ordering: .relaxed)]
        }
        let adder: @Sendable () -> [Bool] = {
            let loop = RunLoop.current
            Self.meet(at: held)
            loop.add(shared.timers[0], forMode: .default)
            let logged = loop.loggedForeignItem.load(ordering: .relaxed)
            loop.add(shared.timers[0], forMode: .default)
            let again = loop.warnOfForeignItem("a third foreign item")
            let added = loop.contains(shared.timers[0], forMode: .default)
            Self.meet(at: checked)
            return [logged, again, added]
        }
        let results = try await onLoopThreads([holder, adder])
        #expect(results[0] == [false], "the loop that holds the timer logged nothing")
        #expect(results[1] == [true, false, false], "logged: the first foreign add; then nothing; never added")
    }

    /// Waits until both racing threads got here.
    private static func meet(at barrier: borrowing Atomic<Int>) {
        barrier.add(1, ordering: .acquiringAndReleasing)
        while barrier.load(ordering: .acquiring) < 2 { sched_yield() }
    }
}

/// The timers, handed to the setter's thread (each timer is itself safe from any thread).
private final class TimerList: Sendable {
    let timers: [RunLoopTimer]
    init(_ timers: [RunLoopTimer]) { self.timers = timers }
}
