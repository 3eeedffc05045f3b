import BenchSupport
import Glibc

/// Process and thread figures read from the kernel: what the table reports.
enum Measure {
    /// Bytes the program holds from malloc now (`mallinfo2`: in-use chunks and mapped blocks): what
    /// RSS would be without what the allocator keeps for reuse.
    static func heapInUseBytes() -> Int {
        Int(bs_heap_in_use())
    }

    /// Resident set size of this process, in bytes (`/proc/self/statm`, second field, in pages).
    static func residentBytes() -> Int {
        let fd = open("/proc/self/statm", O_RDONLY)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return 0 }
        let fields = String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }

    /// CPU time (user + system) the calling thread has used, in nanoseconds.
    static func threadCPUNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// CPU time (user + system) of the whole process, in nanoseconds.
    static func processCPUNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Writes everything printed so far (stdout is a pipe under the script, so it is block-buffered).
    static func flush() { fflush(nil) }
}
