import RunLoopKit

/// When the server announces the presence changes it has noted: at the end of the loop pass of the
/// first change after a quiet interval, then at most once per interval while changes keep coming — so
/// a crowd logging in (hundreds a second, each with an audience of a thousand) costs each member of
/// that audience one write per interval with every arrival in it, not one write per arrival. A pure
/// decision on the loop's clock; the server keeps one.
///
/// With a write budget (``Pace/writesPerSecond``) the interval after an announcement also grows with
/// the sessions it wrote to: a write (a `send`, and the client's wake-up and read) costs the same
/// whether it carries one notice or twenty, and in rooms of 1,000 where each interval brings about
/// one arrival per room, a 100 ms interval still makes nearly one write per notice.
struct PresenceCadence: Equatable {
    /// How often the server may announce.
    struct Pace: Equatable {
        /// The shortest time between two announcements with changes (`.zero`: none).
        var interval: Duration
        /// The sessions a second the announcements may write to on average (0: no such bound).
        var writesPerSecond = 0
        /// The longest time the write budget makes the next announcement wait.
        var longestInterval: Duration = .seconds(1)
    }

    /// When the last announcement with a change went out.
    private var lastAnnounced: LoopInstant?
    /// The sessions written to since then (by that announcement, or by audiences answered after it).
    private var writes = 0

    /// When changes noted at `now` are to be announced: `nil` at the end of this pass (no interval,
    /// or its end is past), otherwise the instant the wait since the last announcement ends.
    func announcement(now: LoopInstant, pace: Pace) -> LoopInstant? {
        guard let lastAnnounced else { return nil }
        let wait = Self.wait(afterWriting: writes, pace: pace)
        guard wait > .zero else { return nil }
        let next = lastAnnounced + wait
        return next > now ? next : nil
    }

    /// An announcement with at least one change goes out at `now`; its writes are counted from here.
    mutating func announced(at now: LoopInstant) {
        lastAnnounced = now
        writes = 0
    }

    /// Presence was written to `sessions` sessions since the last announcement.
    mutating func wrote(_ sessions: Int) {
        writes += sessions
    }

    /// The wait after an announcement that wrote to `writes` sessions: the interval, or as long as
    /// those writes take at the budget's rate when that is longer, but not past the longest.
    static func wait(afterWriting writes: Int, pace: Pace) -> Duration {
        guard pace.writesPerSecond > 0, writes > 0 else { return pace.interval }
        let nanoseconds = Int64(clamping: writes).multipliedReportingOverflow(by: 1_000_000_000)
        let budget: Duration =
            nanoseconds.overflow ? pace.longestInterval : .nanoseconds(nanoseconds.partialValue / Int64(pace.writesPerSecond))
        return max(pace.interval, min(pace.longestInterval, budget))
    }
}
