#if canImport(Glibc)
import Glibc
#endif

/// The system resolver: `getaddrinfo` (hosts file, DNS, …) on a short-lived worker thread per lookup,
/// since `getaddrinfo` blocks and has no asynchronous form in glibc worth relying on.
///
/// The worker blocks every signal, so a daemon's SIGTERM is never delivered to it.
public struct SystemResolver: HostResolver {
    public init() {}

    public func resolve(
        host: String, port: UInt16, completion: @escaping @Sendable (Result<[SocketAddress], NetError>) -> Void
    ) {
        let started = WorkerThread.start {
            completion(Self.lookup(host: host, port: port))
        }
        if !started {
            completion(.failure(.resolutionFailed(host: host, reason: "cannot start a resolver thread")))
        }
    }

    /// Resolves synchronously (blocks the calling thread). Addresses come in `getaddrinfo`'s preference
    /// order, duplicates removed.
    public static func lookup(host: String, port: UInt16) -> Result<[SocketAddress], NetError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else {
            let reason = status == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            return .failure(.resolutionFailed(host: host, reason: reason))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            if let pointer = current.pointee.ai_addr, let address = SocketAddress(UnsafePointer(pointer)) {
                let withPort = address.withPort(port)
                if !addresses.contains(withPort) { addresses.append(withPort) }
            }
            entry = current.pointee.ai_next
        }
        if addresses.isEmpty { return .failure(.resolutionFailed(host: host, reason: "no IPv4 or IPv6 address")) }
        return .success(addresses)
    }
}
