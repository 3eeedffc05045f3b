#if canImport(Glibc)
import Glibc
#endif

/// The one `chat-node serve` on a SQLite file: an exclusive `flock` on `FILE.lock` beside it, held
/// while the node runs, with the holder's pid written in it for the message a second node prints.
///
/// A lock file of its own, not SQLite's locks: SQLite locks for a transaction, not for a process's
/// life, and its exclusive locking mode would shut out what may run beside a node on purpose (`account`
/// commands, a backup). `flock`, not `fcntl`: SQLite's POSIX locks on the database vanish whenever the
/// process closes any descriptor of that file, a `flock` on another file does not. The kernel drops it
/// when the process ends however it ends (`kill -9` too); the pid in a file whose lock is free is stale
/// and is overwritten. A PostgreSQL database serves a cluster of nodes by design and takes no lock.
///
/// Not thread-safe; made and released on one thread (the node's, before it serves and after it stopped).
public final class InstanceLock {
    /// The lock file: the database's path and `.lock`.
    public let path: String
    private var descriptor: Int32

    /// Why the lock was not taken.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// Another process holds it: the pid it wrote, unless it has not written it yet.
        case held(database: String, lockFile: String, pid: Int32?)
        /// The lock file cannot be opened or locked (`errno`).
        case unavailable(lockFile: String, errno: Int32)

        public var description: String {
            switch self {
            case .held(let database, let lockFile, let pid):
                let holder = pid.map { "another chat-node (pid \($0))" } ?? "another chat-node"
                return "the database \(database) is in use by \(holder), which holds \(lockFile): "
                    + "stop it first, or give this node another file with --database"
            case .unavailable(let lockFile, let error):
                return "cannot lock \(lockFile): \(String(cString: strerror(error))) (can this user create and write files beside the database?)"
            }
        }
    }

    /// Takes the lock of the database at `database`, creating its lock file; throws at once (no wait)
    /// when another process holds it.
    public init(database: String) throws(Failure) {
        path = database + ".lock"
        // Assigned once, from a descriptor that is locked: a throw before this point leaves the object
        // unfinished, so no `deinit` runs. Were `descriptor` set first, a refusal would run `release()`
        // on a number already closed: unlinking the holder's lock file (a third node would then start on
        // the same database) and closing that number again, someone else's descriptor by then.
        descriptor = try Self.lockedDescriptor(path, database: database)
        // Should the pid not be written, only a second node's message lacks it: the lock holds anyway.
        let line = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pwrite(descriptor, line, line.count, 0)
    }

    deinit { release() }

    /// Removes the lock file, then lets go of the lock: a node waiting to start finds the path free
    /// or, having opened the old file, sees it is gone and tries again. Idempotent.
    public func release() {
        guard descriptor >= 0 else { return }
        unlink(path)
        close(descriptor)
        descriptor = -1
    }

    /// Opens and locks the file at `path`: its descriptor, which the caller owns. Everything it opened
    /// and did not return is closed.
    private static func lockedDescriptor(_ path: String, database: String) throws(Failure) -> Int32 {
        while true {
            let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw .unavailable(lockFile: path, errno: errno) }
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                let error = errno
                let holder = pid(in: descriptor)
                close(descriptor)
                if error == EWOULDBLOCK { throw .held(database: database, lockFile: path, pid: holder) }
                throw .unavailable(lockFile: path, errno: error)
            }
            // A holder that stopped unlinks the file it locked: the lock taken on that file's old
            // descriptor would guard nothing, and the next try opens the one now at the path.
            if isStill(descriptor, at: path) { return descriptor }
            close(descriptor)
        }
    }

    private static func isStill(_ descriptor: Int32, at path: String) -> Bool {
        var opened = stat()
        var named = stat()
        guard fstat(descriptor, &opened) == 0, stat(path, &named) == 0 else { return false }
        return opened.st_dev == named.st_dev && opened.st_ino == named.st_ino
    }

    /// The pid the holder wrote, if it wrote one.
    private static func pid(in descriptor: Int32) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &bytes, bytes.count, 0)
        guard count > 0 else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self).split(whereSeparator: \.isWhitespace).first.flatMap { Int32($0) }
    }
}

extension InstanceLock {
    /// The lock of a SQLite node's file; `nil` for PostgreSQL, where many nodes share one database.
    public convenience init?(storage: ChatNodeStorage) throws(Failure) {
        guard case .sqlite(let path) = storage else { return nil }
        try self.init(database: path)
    }
}
