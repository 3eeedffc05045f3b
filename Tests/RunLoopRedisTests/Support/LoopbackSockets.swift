import Glibc

/// A TCP socket bound to 127.0.0.1 on a port the kernel chose, and that address.
private func boundLoopbackSocket() throws -> (fd: Int32, address: sockaddr_in) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard fd >= 0, bound else {
        close(fd)
        throw RedisTestError.noAnswer(["bind 127.0.0.1"])
    }
    return (fd, address)
}

/// A TCP port on 127.0.0.1 that was free a moment ago (bound, read back, closed).
func unusedTCPPort() throws -> UInt16 {
    let (fd, address) = try boundLoopbackSocket()
    close(fd)
    return UInt16(bigEndian: address.sin_port)
}

/// A TCP listener on 127.0.0.1 with a backlog of 0 that never accepts, its one queue place taken by a
/// connection of its own: the kernel drops a further connect's SYN, so that connect stays in progress.
struct FullListener {
    let port: UInt16
    private let listener: Int32
    private let filler: Int32

    init() throws {
        let (listener, address) = try boundLoopbackSocket()
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var target = address
        let filler = filler
        let connected = withUnsafePointer(to: &target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                listen(listener, 0) == 0 && connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close()
            throw RedisTestError.noAnswer(["fill the accept queue"])
        }
    }

    func close() {
        Glibc.close(filler)
        Glibc.close(listener)
    }
}
