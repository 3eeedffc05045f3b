import Glibc

/// A connected, non-blocking UNIX socket pair for port-source tests; both ends close on deinit.
///
/// Never `close` an end yourself: deinit would close that number again, by then perhaps another
/// test's descriptor (a parallel test's new loop lost its wake-up port that way). ``closeRight()``
/// closes the right end early, once.
public final class SocketPair: @unchecked Sendable {
    public let left: Int32
    /// The right end; -1 once ``closeRight()`` closed it.
    public private(set) var right: Int32

    public init() {
        var fds: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0, "socketpair failed")
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        left = fds[0]
        right = fds[1]
    }

    deinit {
        close(left)
        if right >= 0 { close(right) }
    }

    /// Closes the right end now (a peer that went away); the left stays open until deinit. Call it
    /// from one thread, once or more.
    public func closeRight() {
        guard right >= 0 else { return }
        close(right)
        right = -1
    }

    /// Writes `text` to the left end.
    public func send(_ text: String, from fd: Int32? = nil) {
        let written = text.withCString { write(fd ?? left, $0, strlen($0)) }
        precondition(written == text.utf8.count, "short write")
    }
}

/// Reads whatever is available (up to `limit` bytes) as text; "" on EOF or nothing available.
public func readAvailable(_ fd: Int32, limit: Int = 4096) -> String {
    var buffer = [UInt8](repeating: 0, count: limit)
    let count = read(fd, &buffer, limit)
    return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
}

/// Whether `fd` is an open descriptor.
public func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) != -1 }

/// The open file a descriptor names: (device, inode).
public struct FileIdentity: Equatable, Sendable {
    public let device: UInt64
    public let inode: UInt64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// What `fd` refers to in this process, or nil if it is not open.
///
/// To tell whether this process closed a descriptor, compare its identity before and after: a closed
/// number may be reused at once by a parallel test (it then names another file). The other end of a
/// socket pair is no witness: a child that a parallel test spawns meanwhile inherits every descriptor
/// without FD_CLOEXEC and keeps the socket open, so the peer sees no end of file until that child exits.
public func fileIdentity(_ fd: Int32) -> FileIdentity? {
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    return FileIdentity(info)
}

/// What the name `path` refers to now, or nil if nothing is there: to tell whether a file was replaced
/// or removed, compare it with an earlier identity.
public func fileIdentity(atPath path: String) -> FileIdentity? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return FileIdentity(info)
}

/// A descriptor number no parallel test will be handed: `slot` below the top of the open-file limit
/// (the soft limit is raised to the hard one first). The kernel gives out the lowest free number, so
/// numbers at the top stay free unless thousands are open; a fixed number like 700 is not — a test
/// holding 1,000 connections lands on it, and a `dup2` onto it would close one of that test's sockets.
/// Use a different `slot` in each test that needs one.
public func reservedDescriptorNumber(slot: Int) -> Int32 {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    let top = Int(min(limit.rlim_cur, 1 << 20))
    precondition(top > 64 + slot, "the open-file limit is too low for a reserved descriptor number")
    return Int32(top - 1 - slot)
}
