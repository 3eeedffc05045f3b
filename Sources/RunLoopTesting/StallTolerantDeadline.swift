import RunLoopKit

/// A test's time limit on the loop's clock that does not count time in which the loop could not run.
///
/// A wait that comes back more than ``stallThreshold`` later than asked was a stall of the process —
/// not scheduled, or every thread blocked on a full output pipe while logging — and the limit moves
/// out by the overrun, by at most the limit again in all. A CI run once lost a whole 30 s limit to such
/// a stall: every test in the process finished ~30 s late together, and waits judged sockets that had
/// had no chance to move. A loop that runs and still never gets there fails at the limit as before.
struct StallTolerantDeadline {
    /// How late a wait must come back to count as a stall rather than a slow pass.
    static let stallThreshold = Duration.seconds(1)

    private(set) var end: LoopInstant
    private let limit: Duration
    private var forgiven = Duration.zero

    init(from now: LoopInstant, limit: Duration) {
        end = now + limit
        self.limit = limit
    }

    /// Notes a wait asked to last at most `asked`, begun at `start` and over at `now`.
    mutating func waited(from start: LoopInstant, asked: Duration, until now: LoopInstant) {
        let overrun = now - start - asked
        guard overrun > Self.stallThreshold, forgiven < limit else { return }
        let extra = min(overrun, limit - forgiven)
        forgiven += extra
        end = end + extra
    }
}
