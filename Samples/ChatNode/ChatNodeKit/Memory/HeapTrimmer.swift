import Glibc
public import Logging
public import RunLoopKit

/// Checks a ``HeapTrimPolicy`` once a second with the node's open sessions, and when it says so
/// empties the caches it was given (SQLite's page cache) and calls `malloc_trim(0)`, logging what
/// came back and what it cost.
///
/// Loop thread only: made, started and stopped on its loop's thread.
public final class HeapTrimmer {
    public let loop: RunLoop
    private var policy: HeapTrimPolicy
    private let sessions: () -> Int
    private let releaseCaches: () -> Void
    private let logger: Logger
    private var timer: RunLoopTimer?

    /// - Parameters:
    ///   - sessions: the count the policy watches, read on the loop's thread.
    ///   - releaseCaches: frees what caches hold before the trim, on the loop's thread.
    public init(
        policy: HeapTrimPolicy = HeapTrimPolicy(), loop: RunLoop, logger: Logger, sessions: @escaping () -> Int,
        releaseCaches: @escaping () -> Void = {}
    ) {
        self.policy = policy
        self.loop = loop
        self.logger = logger
        self.sessions = sessions
        self.releaseCaches = releaseCaches
    }

    public func start() {
        guard timer == nil else { return }
        let timer = RunLoopTimer(after: .seconds(1), repeating: .seconds(1), label: "chat-node.heap-trim") { [weak self] _ in
            self?.check()
        }
        self.timer = timer
        loop.add(timer, forMode: .common)
    }

    public func stop() {
        timer?.invalidate()
        timer = nil
    }

    private func check() {
        let count = sessions()
        guard policy.check(sessions: count, now: loop.now) else { return }
        let before = Self.residentKiB()
        let start = Self.monotonicNanoseconds()
        releaseCaches()
        _ = Self.mallocTrim?(0)
        let micros = (Self.monotonicNanoseconds() - start) / 1_000
        let givenBack = (before - Self.residentKiB()) / 1024
        logger.notice("\(count) sessions open, down from a crowd: \(givenBack) MiB of freed heap given back in \(micros) µs")
    }

    /// glibc's `malloc_trim`, which its Swift module does not show (it is declared in malloc.h).
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()

    /// The process's resident set: the second field of /proc/self/statm, in pages.
    private static func residentKiB() -> Int {
        let descriptor = open("/proc/self/statm", O_RDONLY)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 128)
        let count = read(descriptor, &bytes, bytes.count)
        guard count > 0 else { return 0 }
        let fields = bytes[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * sysconf(Int32(_SC_PAGESIZE)) / 1024
    }

    private static func monotonicNanoseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec * 1_000_000_000 + now.tv_nsec
    }
}
