import Glibc

/// This process's open-file limit: every client connection is a descriptor.
public enum FileLimit {
    /// Raises the open-file limit to at least `wanted` descriptors if this process may (root may raise
    /// the hard limit), otherwise the soft limit to the hard one. Returns the soft limit in force.
    @discardableResult
    public static func raise(wanted: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return -1 }
        if Int(limit.rlim_max) < wanted {
            var raised = rlimit(rlim_cur: rlim_t(wanted), rlim_max: rlim_t(wanted))
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return wanted }
        }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Int(limit.rlim_cur)
    }
}
