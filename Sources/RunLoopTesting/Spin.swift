public import RunLoopKit

/// Runs `loop` in `mode` in short slices until `done()` holds or `limit` (on the loop's clock) has
/// passed, and returns whether `done()` became true. For tests that drive real sockets and wait for
/// an outcome: the limit only ends a hang — the thread sanitizer on a busy machine is many times
/// slower — so it is generous, and a passing test returns as soon as the condition holds. Time in
/// which the loop could not run (a stalled process) does not count against it, up to the limit again.
///
/// Unlike ``RunLoop/runUntil(in:timeout:_:)`` it keeps polling when the mode is momentarily empty
/// (between a connection's close and the next one's start). Loop thread only.
@discardableResult
public func spin(
    _ loop: RunLoop, mode: RunLoop.Mode = .default, for limit: Duration = .seconds(30), until done: () -> Bool
) throws -> Bool {
    let slice = Duration.milliseconds(5)
    var deadline = StallTolerantDeadline(from: loop.now, limit: limit)
    while !done() {
        let start = loop.now
        if start >= deadline.end { return false }
        try loop.run(mode, timeout: slice)
        deadline.waited(from: start, asked: slice, until: loop.now)
    }
    return true
}
