import ChatNodeKit
import RunLoopKit
import Testing

/// Issue 22: RSS back near its level before a crowd once the crowd has left — a heap walk
/// (`malloc_trim`) after a large departure, never while it goes on, and not often.
@Suite("Heap trim policy")
struct HeapTrimPolicyTests {
    /// Feeds the session counts a check a second; returns the counts after which it trimmed.
    func trims(_ counts: [Int], policy: HeapTrimPolicy = HeapTrimPolicy()) -> [Int] {
        let clock = ManualClock()
        var policy = policy
        var trimmedAt: [Int] = []
        for count in counts {
            if policy.check(sessions: count, now: clock.now) { trimmedAt.append(count) }
            clock.advance(by: .seconds(1))
        }
        return trimmedAt
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
}
