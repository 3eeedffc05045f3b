import Glibc

/// A path in `$TMPDIR` (else `/tmp`) for a temporary file that no other test uses: the process id and a
/// random number keep apart the tests that run side by side and the runs of the suite.
///
/// Nothing is created; the test removes what it made there (``removeDatabase(_:)`` for a SQLite file).
/// Any thread.
public func temporaryPath(_ name: String) -> String {
    let directory = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    return "\(directory)/rlk-\(getpid())-\(UInt64.random(in: 0...UInt64.max))-\(name)"
}

/// Removes a SQLite database with the write-ahead log and shared-memory files SQLite keeps beside it,
/// and the lock file of the `chat-node serve` that ran on it (left behind when it was killed); files
/// that are not there are skipped. Any thread.
public func removeDatabase(_ path: String) {
    for suffix in ["", "-wal", "-shm", ".lock"] { unlink(path + suffix) }
}
