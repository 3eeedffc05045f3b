import Glibc

/// A TCP client on plain non-blocking sockets — nothing of RunLoopKit — so the server is judged by an
/// independent peer, as the outside testing did.
final class RawClient {
    let fd: Int32

    enum Received: Equatable {
        case bytes(Int)
        case wouldBlock
        case endOfStream
        case failed(Int32)
    }

    /// Connects (blocking) to 127.0.0.1:`port`, then switches to non-blocking.
    init(port: UInt16) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0, "socket: \(errno)")
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        precondition(status == 0, "connect: \(errno)")
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// This side's port, which the server logs as the peer's.
    var localPort: UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Sends what the socket takes now: the count, or -errno (never SIGPIPE).
    func send(_ bytes: ArraySlice<UInt8>) -> Int {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return sent >= 0 ? sent : -Int(errno)
    }

    func send(_ text: String) -> Int { send(ArraySlice(Array(text.utf8))) }

    /// Reads at most `limit` bytes into `into`.
    func receive(into buffer: inout [UInt8], limit: Int) -> Received {
        if buffer.count < limit { buffer = [UInt8](repeating: 0, count: limit) }
        let count = recv(fd, &buffer, limit, 0)
        if count > 0 { return .bytes(count) }
        if count == 0 { return .endOfStream }
        return errno == EAGAIN || errno == EWOULDBLOCK ? .wouldBlock : .failed(errno)
    }

    /// Waits up to `milliseconds` for input (or the end of it).
    func waitReadable(milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) > 0
    }

    /// Reads until `done` says the text so far is complete, the stream ends, or `milliseconds` pass.
    func readText(milliseconds: Int32, until done: (String) -> Bool) -> String {
        var text = [UInt8]()
        var buffer = [UInt8]()
        let end = monotonicMilliseconds() + Int(milliseconds)
        while !done(String(decoding: text, as: UTF8.self)) {
            let left = end - monotonicMilliseconds()
            guard left > 0, waitReadable(milliseconds: Int32(left)) else { break }
            switch receive(into: &buffer, limit: 4096) {
            case .bytes(let count): text.append(contentsOf: buffer[..<count])
            case .wouldBlock: continue
            case .endOfStream, .failed: return String(decoding: text, as: UTF8.self)
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    func shutdownOutput() { _ = shutdown(fd, Int32(SHUT_WR)) }
}

func monotonicMilliseconds() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return now.tv_sec * 1000 + now.tv_nsec / 1_000_000
}

func errnoName(_ code: Int32) -> String {
    switch code {
    case ECONNRESET: return "ECONNRESET"
    case EPIPE: return "EPIPE"
    default: return String(cString: strerror(code))
    }
}
