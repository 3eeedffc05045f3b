public import RunLoopKit

/// When chat-node gives the memory a crowd of sessions left behind back to the system. glibc keeps
/// the pages of freed blocks for reuse, and the blocks of 19,000 sessions lie scattered between
/// blocks still live, so the heap's top never comes free and nothing is returned by itself: RSS
/// stays at its peak after everyone left. `malloc_trim(0)` returns every free page, but walks the
/// whole heap to find them, so it runs only after a large departure has ended, and not often.
///
/// The frees do not end when the sessions do: connections torn down after their sessions, tables
/// rebuilt smaller, the departure's presence work and the store's caches free their memory over the
/// next seconds, after the crowd's trim walked past. So follow-up trims come a few seconds apart for
/// as long as each still finds pages to give back: the first that finds none says the frees stopped.
///
/// Pure: checks are fed the session count and the loop's time (``HeapTrimmer`` does, once a second),
/// and each follow-up's outcome.
public struct HeapTrimPolicy: Sendable {
    /// Why a trim is due.
    public enum Trim: Sendable, Equatable {
        /// The sessions fell far below their peak and stopped falling.
        case crowdLeft
        /// Memory freed since the last trim, after a crowd left.
        case followUp
    }

    /// A trim is due once the sessions fell to at most this fraction of their peak since the last
    /// trim (or the start)…
    public var keptFraction = 0.5
    /// …by at least this many sessions (a few hundred sessions' blocks are not worth a heap walk)…
    public var minimumDrop = 1_000
    /// …at least this long after the last crowd's trim, once the count stopped falling (a check saw
    /// no fewer than the one before: the crowd has left).
    public var minimumInterval: Duration = .seconds(10)
    /// Follow-up trims come this far apart after a crowd's trim…
    public var followUpInterval: Duration = .seconds(5)
    /// …at most this many, while each gives something back and the sessions do not grow by
    /// ``minimumDrop`` (a new crowd coming: its memory is in use, and its departure has a trim of its own).
    public var maximumFollowUps = 6

    /// The most sessions seen since the last trim.
    public private(set) var peak = 0
    private var previous = 0
    private var lastCrowdTrim: LoopInstant?
    private var followUps: FollowUps?

    /// The follow-up trims still to come after a crowd's trim.
    private struct FollowUps {
        var due: LoopInstant
        var left: Int
        /// The sessions at the crowd's trim.
        var sessions: Int
    }

    public init() {}

    /// Which trim to make now, with `sessions` open at `now`, or `nil` for none. A trim returned
    /// counts as made; tell a follow-up's outcome to ``followUpTrimmed(gaveBack:)``.
    public mutating func check(sessions: Int, now: LoopInstant) -> Trim? {
        peak = max(peak, sessions)
        let stillFalling = sessions < previous
        previous = sessions
        guard !stillFalling else { return nil }
        if crowdLeft(sessions: sessions, now: now) {
            lastCrowdTrim = now
            peak = sessions
            followUps = maximumFollowUps > 0 ? FollowUps(due: now + followUpInterval, left: maximumFollowUps, sessions: sessions) : nil
            return .crowdLeft
        }
        guard var followUps else { return nil }
        if sessions - followUps.sessions >= minimumDrop {
            self.followUps = nil
            return nil
        }
        guard now >= followUps.due else { return nil }
        followUps.left -= 1
        followUps.due = now + followUpInterval
        self.followUps = followUps.left > 0 ? followUps : nil
        return .followUp
    }

    /// A follow-up trim's outcome: one that gave nothing back ends the follow-ups (the frees stopped).
    public mutating func followUpTrimmed(gaveBack: Bool) {
        if !gaveBack { followUps = nil }
    }

    private func crowdLeft(sessions: Int, now: LoopInstant) -> Bool {
        guard peak - sessions >= minimumDrop, Double(sessions) <= Double(peak) * keptFraction else { return false }
        if let lastCrowdTrim, now - lastCrowdTrim < minimumInterval { return false }
        return true
    }
}
