import Glibc

/// Figures read from the kernel: the server's RSS and CPU from /proc/PID (it is another process), the
/// bench's own CPU from its clock.
public enum ProcessStats {
    /// VmRSS of process `pid`, in bytes (/proc/PID/status, "VmRSS:   1234 kB"), or 0 if unreadable.
    public static func residentBytes(of pid: Int32) -> Int {
        guard let text = read("/proc/\(pid)/status") else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 2, let kib = Int(fields[1]) { return kib * 1024 }
        }
        return 0
    }

    /// User + system CPU time of process `pid` (all its threads), in nanoseconds, from /proc/PID/stat
    /// (utime and stime, fields 14 and 15, in clock ticks: 10 ms resolution).
    public static func cpuNanoseconds(of pid: Int32) -> UInt64 {
        guard let text = read("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return 0 }
        // The command name (field 2) may hold spaces; the fields after its ')' start at field 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return 0 }
        let ticks = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        return (user + system) * 1_000_000_000 / ticks
    }

    /// ``cpuNanoseconds(of:)`` of process `pid` plus that of its children now alive (a PostgreSQL
    /// postmaster's backends; /proc/PID/task/PID/children, the children of its main thread).
    public static func treeCPUNanoseconds(of pid: Int32) -> UInt64 {
        let children = read("/proc/\(pid)/task/\(pid)/children")?.split(separator: " ").compactMap { Int32($0) } ?? []
        return children.reduce(cpuNanoseconds(of: pid)) { $0 + cpuNanoseconds(of: $1) }
    }

    /// Time the main thread of process `pid` spent runnable but waiting for a CPU, in nanoseconds
    /// (/proc/PID/schedstat, second field). The servers here run on their main thread, so on a shared
    /// machine this says how much of the window the server wanted to run and could not.
    public static func runQueueWaitNanoseconds(of pid: Int32) -> UInt64 {
        guard let text = read("/proc/\(pid)/schedstat") else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1 else { return 0 }
        return UInt64(fields[1]) ?? 0
    }

    /// CPU time (user + system) of this whole process, every thread, in nanoseconds.
    public static func ownCPUNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + total, $0.count - total) }
            guard count > 0 else { break }
            total += count
        }
        return total > 0 ? String(decoding: buffer[..<total], as: UTF8.self) : nil
    }
}
