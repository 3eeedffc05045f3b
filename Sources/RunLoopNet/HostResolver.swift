/// Turns a host name into addresses for ``TCPConnection/connect(to:port:timeout:resolver:)``.
///
/// IP literals never reach a resolver: the connection parses them itself, synchronously. A resolver is
/// asked only for names, and must not block the calling thread (the loop's): it answers later, from
/// any thread, and the connection hands the answer back to its loop. Tests inject their own resolver
/// (one that never answers, say) to drive the connect timeout deterministically.
public protocol HostResolver: Sendable {
    /// Starts resolving `host`. Called on the loop's thread; must return without blocking.
    /// - Parameter completion: call exactly once, from any thread, with the addresses to try in order
    ///   (each carrying `port`) or the failure (``NetError/resolutionFailed(host:reason:)``).
    func resolve(host: String, port: UInt16, completion: @escaping @Sendable (Result<[SocketAddress], NetError>) -> Void)
}
