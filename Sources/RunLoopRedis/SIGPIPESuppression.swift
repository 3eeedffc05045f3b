import Glibc

/// Runs `body` with SIGPIPE blocked on the calling thread, and takes back a SIGPIPE that `body`
/// raised on it, so that a write to a connection the peer has closed fails with `EPIPE` and does
/// not end the process.
///
/// hiredis writes commands with a plain `write(2)`, without `MSG_NOSIGNAL`. A process that has not
/// ignored SIGPIPE dies silently, with no log line, when Redis closes the connection (`CLIENT KILL`,
/// a restart) between the loop's poll and that write. Three chat-node processes died this way in
/// one run under the thread sanitizer, whose slowdown widens that window. A library must not change
/// the process's signal disposition, so it does what libpq does: block the signal around the write,
/// then consume a SIGPIPE left pending by the write. A SIGPIPE that was pending before stays pending.
func withSIGPIPESuppressed<T>(_ body: () throws -> T) rethrows -> T {
    var brokenPipe = sigset_t()
    sigemptyset(&brokenPipe)
    sigaddset(&brokenPipe, SIGPIPE)
    var previousMask = sigset_t()
    pthread_sigmask(SIG_BLOCK, &brokenPipe, &previousMask)
    let wasPending = isSIGPIPEPending()
    defer {
        if !wasPending && isSIGPIPEPending() {
            var now = timespec()
            _ = sigtimedwait(&brokenPipe, nil, &now)
        }
        pthread_sigmask(SIG_SETMASK, &previousMask, nil)
    }
    return try body()
}

/// Whether a SIGPIPE waits for this thread or the process (blocked, so not delivered yet).
func isSIGPIPEPending() -> Bool {
    var pending = sigset_t()
    sigpending(&pending)
    return sigismember(&pending, SIGPIPE) == 1
}
