import ChatNodeKit
import RunLoopKit
import Testing

/// Issue 22: RSS back near its level before a crowd once the crowd has left — a heap walk
/// (`malloc_trim`) after a large departure, never while it goes on, and not often; then follow-ups
/// for what is freed after it, until one finds nothing.
@Suite("Heap trim policy")
struct HeapTrimPolicyTests {
    /// Feeds the session counts a check a second; returns the counts after which it trimmed.
    func trims(_ counts: [Int], policy: HeapTrimPolicy = HeapTrimPolicy()) -> [Int] {
        trimSeconds(counts, policy: policy).map { counts[$0.second] }
    }

    /// Feeds the session counts a check a second, telling each follow-up `gaveBack(n)` for the n-th
    /// follow-up (0 first); returns when (the check's index) each trim came, and of which kind.
    func trimSeconds(
        _ counts: [Int], policy: HeapTrimPolicy = HeapTrimPolicy(), gaveBack: (Int) -> Bool = { _ in true }
    ) -> [(second: Int, trim: HeapTrimPolicy.Trim)] {
        let clock = ManualClock()
        var policy = policy
        var trimmed: [(second: Int, trim: HeapTrimPolicy.Trim)] = []
        var followUps = 0
        for (second, count) in counts.enumerated() {
            if let trim = policy.check(sessions: count, now: clock.now) {
                trimmed.append((second, trim))
                if trim == .followUp {
                    policy.followUpTrimmed(gaveBack: gaveBack(followUps))
                    followUps += 1
                }
            }
            clock.advance(by: .seconds(1))
        }
        return trimmed
    }

    @Test("a crowd of 19,000 leaving: one trim, once the count stopped falling")
    func afterTheCrowdLeft() {
        #expect(trims([0, 5_000, 19_000, 19_000, 12_000, 3_000, 40, 40, 40]) == [40])
    }

    @Test("no trim while the count only grows, or falls by less than half or by fewer than 1,000")
    func smallOrPartialDrops() {
        #expect(trims([0, 100, 19_000, 19_000]).isEmpty)
        #expect(trims([19_000, 10_000, 10_000]).isEmpty, "fell by less than half")
        #expect(trims([1_500, 600, 600]).isEmpty, "fell by fewer than 1,000")
    }

    @Test("a second crowd leaving is trimmed again, but not within 10 s of the last trim")
    func rateLimited() {
        let first = [19_000, 0, 0]
        // Back up and down again at once: the 10 s have not passed; once they have, it trims.
        #expect(trims(first + [5_000, 0, 0]) == [0])
        #expect(trims(first + [5_000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) == [0, 0])
    }

    @Test("follow-ups come 5 s apart after the crowd's trim while each gives something back, at most 6")
    func followUpsWhileFreesGoOn() {
        let afterCrowd = [19_000, 0] + Array(repeating: 0, count: 40)
        let all = trimSeconds(afterCrowd)
        #expect(all.map(\.second) == [2, 7, 12, 17, 22, 27, 32])
        #expect(all.map(\.trim) == [.crowdLeft] + Array(repeating: .followUp, count: 6))
        let policy = HeapTrimPolicy()
        #expect(all.count == 1 + policy.maximumFollowUps)
    }

    @Test("the first follow-up that gives nothing back ends them: the frees stopped")
    func followUpsEndWhenNothingIsFreed() {
        let afterCrowd = [19_000, 0] + Array(repeating: 0, count: 40)
        #expect(trimSeconds(afterCrowd) { $0 < 2 }.map(\.second) == [2, 7, 12, 17])
        #expect(trimSeconds(afterCrowd) { _ in false }.map(\.second) == [2, 7])
    }

    @Test("no follow-up while the count falls, and none once a new crowd of 1,000 comes")
    func followUpsWaitForQuietAndStopForANewCrowd() {
        // Falling again at the follow-up's time: it waits for the first check that saw no fall.
        let stillLeaving = [19_000, 2_000, 2_000, 1_900, 1_800, 1_700, 1_600, 1_500, 1_500]
        #expect(trimSeconds(stillLeaving).map(\.second) == [2, 8])
        // A few logins meanwhile do not stop them; a crowd does, and its departure is trimmed anew.
        let fewLogins = [19_000, 0, 0, 300, 300, 300, 300, 300]
        #expect(trimSeconds(fewLogins).map(\.second) == [2, 7])
        let newCrowd = [19_000, 0, 0, 5_000] + Array(repeating: 5_000, count: 10)
        #expect(trimSeconds(newCrowd).map(\.second) == [2])
    }
}
