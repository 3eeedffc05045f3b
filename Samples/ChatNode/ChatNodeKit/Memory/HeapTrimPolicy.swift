public import RunLoopKit

/// When chat-node gives the memory a crowd of sessions left behind back to the system. glibc keeps
/// the pages of freed blocks for reuse, and the blocks of 19,000 sessions lie scattered between
/// blocks still live, so the heap's top never comes free and nothing is returned by itself: RSS
/// stays at its peak after everyone left. `malloc_trim(0)` returns every free page, but walks the
/// whole heap to find them, so it runs only after a large departure has ended, and not often.
///
/// Pure: checks are fed the session count and the loop's time (``HeapTrimmer`` does, once a second).
public struct HeapTrimPolicy: Sendable {
    /// A trim is due once the sessions fell to at most this fraction of their peak since the last
    /// trim (or the start)…
    public var keptFraction = 0.5
    /// …by at least this many sessions (a few hundred sessions' blocks are not worth a heap walk)…
    public var minimumDrop = 1_000
    /// …at least this long after the last trim, once the count stopped falling (a check saw no
    /// fewer than the one before: the crowd has left).
    public var minimumInterval: Duration = .seconds(10)

    /// The most sessions seen since the last trim.
    public private(set) var peak = 0
    private var previous = 0
    private var lastTrim: LoopInstant?

    public init() {}

    /// Whether to trim now, with `sessions` open at `now`. A `true` counts as the trim made.
    public mutating func check(sessions: Int, now: LoopInstant) -> Bool {
        peak = max(peak, sessions)
        let stillFalling = sessions < previous
        previous = sessions
        guard !stillFalling, peak - sessions >= minimumDrop, Double(sessions) <= Double(peak) * keptFraction else { return false }
        if let lastTrim, now - lastTrim < minimumInterval { return false }
        lastTrim = now
        peak = sessions
        return true
    }
}
