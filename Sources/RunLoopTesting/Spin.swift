import RunLoopKit

/// Runs `loop` in `mode` in short slices until `done()` holds or `limit` (on the loop's clock) has
/// passed, and returns whether `done()` became true. For tests that drive real sockets and wait for
/// an outcome: the limit only ends a hang — the thread sanitizer on a busy machine is many times
/// slower — so it is generous, and a passing test returns as soon as the condition holds.
///
/// Time in which the loop could not run does not count against the limit: a slice that comes back
/// more than a second late (the process was not scheduled, or blocked on a full output pipe) extends
/// the limit by its overrun, up to `limit` again in all. A CI run once lost the whole 30 s to such a
/// stall — every test in the process finished ~30 s late together — and a spin judged sockets that
/// had had no chance to move. A loop that runs and still never gets there fails at the limit.
///
/// Unlike ``RunLoop/runUntil(in:timeout:_:)`` it keeps polling when the mode is momentarily empty
/// (between a connection's close and the next one's start). Loop thread only.
@discardableResult
public func spin(
    _ loop: RunLoop, mode: RunLoop.Mode = .default, for limit: Duration = .seconds(30), until done: () -> Bool
) throws -> Bool {
    let slice = Duration.milliseconds(5)
    var end = loop.now + limit
    var forgiven = Duration.zero
    while !done() {
        let start = loop.now
        if start >= end { return false }
        try loop.run(mode, timeout: slice)
        let overrun = loop.now - start - slice
        if overrun > spinStallThreshold && forgiven < limit {
            let extra = min(overrun, limit - forgiven)
            forgiven += extra
            end = end + extra
        }
    }
    return true
}

/// How late a 5 ms slice must come back to count as a stall rather than a slow pass.
let spinStallThreshold = Duration.seconds(1)
