/// Whether traffic can currently leave this host toward a target (or toward the network at all), as
/// ``NetworkReachability`` last judged it from the kernel's routing table and link states.
///
/// Reachable does not mean the peer answers: only that the kernel has a route whose link is up. It is
/// the signal to try (and the end of a wait), never proof of a working connection.
public enum NetworkPath: Equatable, Sendable, CustomStringConvertible {
    /// A route to the target exists and its link is up; without a target, a default route (IPv4 or
    /// IPv6) exists whose link is up.
    case reachable
    /// No usable route, with the reason for people: "no route to 10.1.2.3", "no default route",
    /// "link veth0 down", "link eth0 has no carrier".
    case unreachable(String)

    /// True for ``reachable``.
    public var isReachable: Bool { self == .reachable }

    public var description: String {
        switch self {
        case .reachable: return "reachable"
        case .unreachable(let reason): return "unreachable: \(reason)"
        }
    }
}
