#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address with a port: where a connection goes, or where a listener listens.
///
/// A plain value, safe to pass between threads. Create one from an IP literal with
/// ``init(ip:port:)``; host names go through a ``HostResolver`` instead.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable {
        case ipv4
        case ipv6
    }

    /// IPv4 or IPv6.
    public let family: Family
    /// The port, in host byte order.
    public let port: UInt16
    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6.
    public var addressBytes: [UInt8] {
        withUnsafeBytes(of: storage) { Array($0.prefix(family == .ipv4 ? 4 : 16)) }
    }
    /// The IPv6 scope (interface index) of a link-local address; 0 otherwise.
    public let scopeID: UInt32
    /// The address bytes inline (an IPv4 address in the first 4, the rest zero): every connection
    /// keeps two addresses, and an array each was two allocations per connection.
    private let storage: (UInt64, UInt64)

    /// Parses an IP literal ("127.0.0.1", "::1", "fe80::1%eth0"; brackets around IPv6 allowed).
    /// Returns `nil` for anything else, host names included. Never blocks.
    public init?(ip: String, port: UInt16) {
        var text = Substring(ip)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        var v4 = in_addr()
        if inet_pton(AF_INET, String(text), &v4) == 1 {
            self.init(family: .ipv4, port: port, bytes: withUnsafeBytes(of: v4) { Array($0) }, scopeID: 0)
            return
        }
        var scope: UInt32 = 0
        if let percent = text.firstIndex(of: "%") {
            let name = String(text[text.index(after: percent)...])
            scope = UInt32(name) ?? if_nametoindex(name)
            guard scope != 0 else { return nil }
            text = text[..<percent]
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, String(text), &v6) == 1 else { return nil }
        self.init(family: .ipv6, port: port, bytes: withUnsafeBytes(of: v6) { Array($0) }, scopeID: scope)
    }

    private init(family: Family, port: UInt16, bytes: [UInt8], scopeID: UInt32) {
        self.init(family: family, port: port, scopeID: scopeID) { $0.copyBytes(from: bytes) }
    }

    private init(family: Family, port: UInt16, scopeID: UInt32, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        var storage: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &storage) { fill(UnsafeMutableRawBufferPointer(rebasing: $0.prefix(family == .ipv4 ? 4 : 16))) }
        self.init(family: family, port: port, scopeID: scopeID, storage: storage)
    }

    private init(family: Family, port: UInt16, scopeID: UInt32, storage: (UInt64, UInt64)) {
        self.family = family
        self.port = port
        self.scopeID = scopeID
        self.storage = storage
    }

    public static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        a.family == b.family && a.port == b.port && a.scopeID == b.scopeID && a.storage == b.storage
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(family)
        hasher.combine(port)
        hasher.combine(scopeID)
        hasher.combine(storage.0)
        hasher.combine(storage.1)
    }

    /// 127.0.0.1 at `port`.
    public static func ipv4Loopback(port: UInt16) -> SocketAddress {
        SocketAddress(family: .ipv4, port: port, bytes: [127, 0, 0, 1], scopeID: 0)
    }

    /// ::1 at `port`.
    public static func ipv6Loopback(port: UInt16) -> SocketAddress {
        SocketAddress(family: .ipv6, port: port, bytes: Array(repeating: 0, count: 15) + [1], scopeID: 0)
    }

    /// 0.0.0.0 (every IPv4 interface) at `port`.
    public static func ipv4Any(port: UInt16) -> SocketAddress {
        SocketAddress(family: .ipv4, port: port, bytes: [0, 0, 0, 0], scopeID: 0)
    }

    /// :: (every IPv6 interface, and IPv4 too unless the system disables dual stack) at `port`.
    public static func ipv6Any(port: UInt16) -> SocketAddress {
        SocketAddress(family: .ipv6, port: port, bytes: Array(repeating: 0, count: 16), scopeID: 0)
    }

    /// The same address with another port.
    public func withPort(_ port: UInt16) -> SocketAddress {
        SocketAddress(family: family, port: port, scopeID: scopeID, storage: storage)
    }

    /// The numeric address, without the port ("127.0.0.1", "::1").
    public var ip: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let domain = family == .ipv4 ? AF_INET : AF_INET6
        let ok = withUnsafeBytes(of: storage) { raw in
            inet_ntop(domain, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return "?" }
        let end = buffer.firstIndex(of: 0) ?? buffer.count
        return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// "127.0.0.1:80" or "[::1]:80".
    public var description: String {
        family == .ipv4 ? "\(ip):\(port)" : "[\(ip)]:\(port)"
    }

    var domain: Int32 { family == .ipv4 ? AF_INET : AF_INET6 }

    /// Calls `body` with the address as a `sockaddr` for bind/connect.
    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        switch family {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin_addr) { target in withUnsafeBytes(of: storage) { target.copyBytes(from: $0.prefix(4)) } }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_scope_id = scopeID
            withUnsafeMutableBytes(of: &address.sin6_addr) { target in withUnsafeBytes(of: storage) { target.copyBytes(from: $0) } }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    /// Reads an address the kernel filled in (accept, getsockname, getaddrinfo); nil for other families.
    init?(_ pointer: UnsafePointer<sockaddr>) {
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            let address = UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in.self)
            self.init(family: .ipv4, port: UInt16(bigEndian: address.sin_port), scopeID: 0) { target in
                withUnsafeBytes(of: address.sin_addr) { target.copyBytes(from: $0) }
            }
        case AF_INET6:
            let address = UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in6.self)
            self.init(family: .ipv6, port: UInt16(bigEndian: address.sin6_port), scopeID: address.sin6_scope_id) { target in
                withUnsafeBytes(of: address.sin6_addr) { target.copyBytes(from: $0) }
            }
        default:
            return nil
        }
    }

    /// The local (`getsockname`) or remote (`getpeername`) address of a socket.
    static func of(_ fd: Int32, peer: Bool) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                let status = peer ? getpeername(fd, address, &length) : getsockname(fd, address, &length)
                return status == 0 ? SocketAddress(address) : nil
            }
        }
    }
}
