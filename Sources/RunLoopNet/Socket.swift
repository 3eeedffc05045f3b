import CRunLoopSupport

#if canImport(Glibc)
import Glibc
#endif

/// Thin wrappers over the socket system calls RunLoopNet uses. Every socket is non-blocking and
/// close-on-exec from birth; every send passes MSG_NOSIGNAL, so no write ever raises SIGPIPE (Linux has
/// no SO_NOSIGPIPE).
enum Socket {
    /// A new non-blocking, close-on-exec TCP socket for `family`.
    static func make(_ family: SocketAddress.Family) throws(NetError) -> Int32 {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(family == .ipv4 ? AF_INET : AF_INET6, type, 0)
        guard fd >= 0 else { throw NetError.from(errno: errno, operation: "socket") }
        return fd
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32, _ label: String) throws(NetError) {
        var value = value
        guard setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .system(errno: errno, operation: "setsockopt(\(label))")
        }
    }

    /// The pending error of a socket (SO_ERROR), which also clears it; 0 if none.
    static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
        return value
    }

    /// SO_LINGER with a zero timeout: the next close sends a reset and drops unsent data.
    static func setResetOnClose(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    /// `send` with MSG_NOSIGNAL, retried on EINTR. Returns the count sent, or -errno.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        while true {
            let sent = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if sent >= 0 { return sent }
            if errno != EINTR { return -Int(errno) }
        }
    }

    /// `recv`, retried on EINTR. Returns the count read (0 at end of input), or -errno.
    static func receive(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            if errno != EINTR { return -Int(errno) }
        }
    }

    /// Bytes sent (or queued for sending) that the peer has not acknowledged yet; 0 if unknown.
    static func unacknowledgedBytes(_ fd: Int32) -> Int {
        Int(max(0, rlk_unacknowledged_bytes(fd)))
    }

    /// Bytes received and not read yet; 0 if unknown.
    static func unreadBytes(_ fd: Int32) -> Int {
        Int(max(0, rlk_unread_bytes(fd)))
    }

    /// Reads and drops whatever input is already queued (a bounded amount), so that closing a socket
    /// that was never served — a refused client — does not turn into a reset that could swallow the
    /// refusal message. Served connections close through the lingering close instead.
    static func discardInput(_ fd: Int32) {
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 1) { buffer in
            var rounds = 0
            while rounds < 64, recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT)) > 0 { rounds += 1 }
        }
    }

    /// accept4(SOCK_NONBLOCK | SOCK_CLOEXEC), through CRunLoopSupport (Glibc's Swift module does not
    /// export accept4): the new descriptor is non-blocking and close-on-exec from its first instant.
    static func accept(_ fd: Int32) -> (fd: Int32, address: SocketAddress?) {
        var storage = sockaddr_storage()
        var length = UInt32(MemoryLayout<sockaddr_storage>.size)
        let accepted = withUnsafeMutablePointer(to: &storage) { rlk_accept_nonblocking(fd, $0, &length) }
        guard accepted >= 0 else { return (-errno, nil) }
        let address = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0) }
        }
        return (accepted, address)
    }
}
