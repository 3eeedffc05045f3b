import Glibc

/// The first of `candidates` that is open on the same file as `descriptor` (same device and inode),
/// or nil. Both ends of a pipe are one file, so this also finds a pipe's other end.
///
/// Why it exists: once something in a process closes its standard error (a double close of a
/// number that used to be something else), the next pipe or socket made takes number 2, and the
/// process's log lines go there — a test once read another test's log line as its server's
/// "listening on" line. Asking whether 0–2 became a pipe of ours names that failure instead.
public func descriptor(in candidates: some Sequence<Int32>, sharingFileWith descriptor: Int32) -> Int32? {
    var target = stat()
    guard fstat(descriptor, &target) == 0 else { return nil }
    for candidate in candidates where candidate != descriptor {
        var other = stat()
        if fstat(candidate, &other) == 0, other.st_dev == target.st_dev, other.st_ino == target.st_ino {
            return candidate
        }
    }
    return nil
}
