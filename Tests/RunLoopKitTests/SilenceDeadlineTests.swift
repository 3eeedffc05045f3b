import RunLoopKit
import Testing

/// "Late, not silent" on its own, on plain instants: a deadline that passes while the peer's bytes
/// wait gets one grace, and only one, until the wait starts over.
@Suite struct SilenceDeadlineTests {
    let deadline = LoopInstant(nanoseconds: 1_000_000_000)
    let grace = SilenceDeadline.defaultGrace

    @Test func beforeTheDeadlineAllIsFineAndTheBytesAreNotAskedAbout() {
        var judge = SilenceDeadline()
        var asked = false
        let verdict = judge.judge(deadline, now: deadline - .milliseconds(1)) {
            asked = true; return true
        }
        #expect(verdict == .fine)
        #expect(!asked)
        #expect(judge.due(deadline) == deadline)
    }

    @Test func aSilentPeerExpiresAtTheDeadline() {
        var judge = SilenceDeadline()
        #expect(judge.judge(deadline, now: deadline) { false } == .expired)
        #expect(judge.grant == nil)
    }

    @Test func bytesWaitingAtTheDeadlineGiveOneGraceFromNow() {
        var judge = SilenceDeadline()
        let late = deadline + .milliseconds(30)
        #expect(judge.judge(deadline, now: late) { true } == .extend(to: late + grace))
        #expect(judge.due(deadline) == late + grace)
        #expect(judge.judge(deadline, now: late + .milliseconds(49)) { true } == .fine)
        // The grace is spent: bytes that still wait without an answer do not earn another.
        #expect(judge.judge(deadline, now: late + grace) { true } == .expired)
    }

    @Test func anOwnerThatMovesItsDeadlineToTheGracesEndIsJudgedThere() {
        var judge = SilenceDeadline()
        guard case .extend(let moved) = judge.judge(deadline, now: deadline, peerBytesWaiting: { true }) else {
            Issue.record("no grace")
            return
        }
        #expect(judge.due(moved) == moved)
        #expect(judge.judge(moved, now: moved - .nanoseconds(1)) { true } == .fine)
        #expect(judge.judge(moved, now: moved) { true } == .expired)
    }

    @Test func perWaitSharesOneGraceBetweenDeadlinesUntilTheWaitStartsOver() {
        var judge = SilenceDeadline(renewal: .perWait)
        _ = judge.judge(deadline, now: deadline) { true }
        let later = deadline + .seconds(5)
        #expect(judge.judge(later, now: later) { true } == .expired)
        judge.startOver()
        #expect(judge.grant == nil)
        #expect(judge.judge(later, now: later) { true } == .extend(to: later + grace))
    }

    @Test func perDeadlineGivesEachNewDeadlineItsOwnGrace() {
        var judge = SilenceDeadline(grace: .seconds(20), renewal: .perDeadline)
        #expect(judge.judge(deadline, now: deadline) { true } == .extend(to: deadline + .seconds(20)))
        // The same deadline, judged again at the grace's end: spent.
        #expect(judge.judge(deadline, now: deadline + .seconds(20)) { true } == .expired)
        let next = deadline + .seconds(40)
        #expect(judge.judge(next, now: next) { true } == .extend(to: next + .seconds(20)))
    }

    @Test func theGraceLengthIsAParameter() {
        var judge = SilenceDeadline(grace: .milliseconds(200))
        #expect(judge.grace == .milliseconds(200))
        #expect(judge.judge(deadline, now: deadline) { true } == .extend(to: deadline + .milliseconds(200)))
    }

    @Test func aJudgeResumedFromAGrantKeepsItsVerdicts() {
        var first = SilenceDeadline()
        let late = deadline + .milliseconds(30)
        #expect(first.judge(deadline, now: late) { true } == .extend(to: late + grace))
        // Only the grant is kept; the judge made again from it is the same judge.
        var resumed = SilenceDeadline(resuming: first.grant)
        #expect(resumed == first)
        #expect(resumed.due(deadline) == late + grace)
        #expect(resumed.judge(deadline, now: late + grace) { true } == .expired)
        #expect(SilenceDeadline(resuming: nil) == SilenceDeadline())
    }
}
