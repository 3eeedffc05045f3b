import RunLoopKit

/// When the server announces the presence changes it has noted: at the end of the loop pass of the
/// first change after a quiet interval, then at most once per interval while changes keep coming — so
/// a crowd logging in (hundreds a second, each with an audience of a thousand) costs each member of
/// that audience one write per interval with every arrival in it, not one write per arrival. A pure
/// decision on the loop's clock; the server keeps one.
struct PresenceCadence: Equatable {
    /// When the last announcement with a change went out.
    private var lastAnnounced: LoopInstant?

    /// When changes noted at `now` are to be announced: `nil` at the end of this pass (no interval,
    /// or none went out within it), otherwise the instant the interval since the last one ends.
    func announcement(now: LoopInstant, interval: Duration) -> LoopInstant? {
        guard interval > .zero, let lastAnnounced else { return nil }
        let next = lastAnnounced + interval
        return next > now ? next : nil
    }

    /// An announcement with at least one change went out at `now`.
    mutating func announced(at now: LoopInstant) {
        lastAnnounced = now
    }
}
