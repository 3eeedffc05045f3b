import RunLoopKit

/// Runs `loop` in `mode` in short slices until `done()` holds or `limit` (on the loop's clock) has
/// passed, and returns whether `done()` became true. For tests that drive real sockets and wait for
/// an outcome: the limit only ends a hang — the thread sanitizer on a busy machine is many times
/// slower — so it is generous, and a passing test returns as soon as the condition holds.
///
/// Unlike ``RunLoop/runUntil(in:timeout:_:)`` it keeps polling when the mode is momentarily empty
/// (between a connection's close and the next one's start). Loop thread only.
@discardableResult
public func spin(
    _ loop: RunLoop, mode: RunLoop.Mode = .default, for limit: Duration = .seconds(30), until done: () -> Bool
) throws -> Bool {
    let end = loop.now + limit
    while !done() {
        if loop.now >= end { return false }
        try loop.run(mode, timeout: .milliseconds(5))
    }
    return true
}
