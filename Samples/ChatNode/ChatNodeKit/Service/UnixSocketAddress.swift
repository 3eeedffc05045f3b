#if canImport(Glibc)
public import Glibc
#endif

/// A unix socket's address written as `NOTIFY_SOCKET` writes it: a path, or an abstract name (no file,
/// gone with the socket) with a leading `@` for its leading zero byte.
public struct UnixSocketAddress {
    private var address = sockaddr_un()
    private let length: socklen_t

    /// `nil` when `name` starts with neither `/` nor `@`, is too long, or is `@` alone.
    public init?(_ name: String) {
        var bytes = Array(name.utf8)
        guard let first = bytes.first, first == UInt8(ascii: "/") || first == UInt8(ascii: "@") else { return nil }
        let isAbstract = first == UInt8(ascii: "@")
        if isAbstract { bytes[0] = 0 }
        // A path needs room for its terminating zero; an abstract name is its bytes exactly.
        guard bytes.count > 1, bytes.count + (isAbstract ? 0 : 1) <= MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in path.copyBytes(from: bytes) }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2
        length = socklen_t(pathOffset + bytes.count + (isAbstract ? 0 : 1))
    }

    /// Calls `body` with the address and its length, for `bind`, `connect` or `sendto`.
    public func withSocketAddress<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafePointer(to: address) { address in
            address.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
