import Glibc
import Logging
import RunLoopKit
import RunLoopNet
import RunLoopTesting

/// A listener on 127.0.0.1 (or `host`), port 0, that echoes everything it receives.
func echoListener(host: String = "127.0.0.1", modes: [RunLoop.Mode] = [.common]) throws -> TCPListener {
    let listener = TCPListener(modes: modes)
    listener.onAccept = { _, connection in
        connection.onData = { connection, bytes in try? connection.write(bytes) }
    }
    try listener.listen(host: host, port: 0)
    return listener
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// A resolver that never answers: the connect timeout is the only way out.
struct NeverResolver: HostResolver {
    func resolve(host: String, port: UInt16, completion: @escaping @Sendable (Result<[SocketAddress], NetError>) -> Void) {}
}

/// A resolver that fails every name, from another thread.
struct FailingResolver: HostResolver {
    func resolve(host: String, port: UInt16, completion: @escaping @Sendable (Result<[SocketAddress], NetError>) -> Void) {
        startThread { completion(.failure(.resolutionFailed(host: host, reason: "no such host (test)"))) }
    }
}

/// Wraps the system resolver and records whether it was asked on, and answered off, the loop thread.
final class RecordingResolver: HostResolver, @unchecked Sendable {
    let askedOnLoopThread = LockedBox(false)
    let answeredOnLoopThread = LockedBox(true)
    let loop: RunLoop
    init(loop: RunLoop) { self.loop = loop }

    func resolve(host: String, port: UInt16, completion: @escaping @Sendable (Result<[SocketAddress], NetError>) -> Void) {
        askedOnLoopThread.set(loop.isCurrentThread)
        let loop = self.loop
        let answered = answeredOnLoopThread
        SystemResolver().resolve(host: host, port: port) { result in
            answered.set(loop.isCurrentThread)
            completion(result)
        }
    }
}

/// Whether ::1 can be bound here (containers sometimes disable IPv6).
let ipv6LoopbackAvailable: Bool = {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr.__in6_u.__u6_addr8.15 = 1
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
        }
    }
}()

/// A loopback port that is bound but not listening, so connecting to it is refused and nobody else
/// can take it meanwhile. Close the returned descriptor when done.
func boundPortWithoutListener() -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    precondition(fd >= 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            precondition(bind(fd, $0, length) == 0)
            precondition(getsockname(fd, $0, &length) == 0)
        }
    }
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// Raises the soft descriptor limit to the hard limit; returns the soft limit now in force.
func raiseDescriptorLimit() -> UInt64 {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return UInt64(limit.rlim_cur)
}

/// A logger at `level` that keeps what it logs in `handler`.
func capturingLogger(_ handler: CapturingLogHandler, level: Logger.Level = .trace) -> Logger {
    var logger = Logger(label: "test") { _ in handler }
    logger.logLevel = level
    return logger
}
