import CRunLoopSupport

#if canImport(Glibc)
import Glibc
#endif

/// The process's descriptor limit (RLIMIT_NOFILE), which bounds how many connections it can hold:
/// every connection is a descriptor, and so is everything else the process has open.
///
/// A daemon usually calls ``raiseSoftLimitToHard()`` once at startup (the stock soft limit of 1024 is
/// far below what the hard limit allows); a ``TCPListener`` then fits its ``TCPListener/maximumConnections``
/// to whatever limit is in force when it starts listening. Safe from any thread.
public enum DescriptorLimit {
    /// The soft limit (what is enforced) and the hard limit (how far the soft one may be raised).
    public static var current: (soft: Int, hard: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (Int.max, Int.max) }
        return (clamp(limit.rlim_cur), clamp(limit.rlim_max))
    }

    /// Raises the soft limit to the hard limit (no privilege needed). Returns the soft limit in force
    /// afterwards, which is the old one if the kernel refused.
    @discardableResult
    public static func raiseSoftLimitToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return current.soft }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return current.soft
    }

    /// How many descriptors the process has open now (the entries of /proc/self/fd, less the one
    /// used to list them); 0 if that cannot be read.
    static func openCount() -> Int {
        // In C: copying a readdir entry whole in Swift reads past its record (see the header).
        max(0, Int(rlk_open_descriptor_count()))
    }

    private static func clamp(_ value: rlim_t) -> Int {
        value >= rlim_t(Int.max) ? Int.max : Int(value)
    }
}
