import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A plain mutex. The loop takes it for short critical sections and never holds it across a callout,
/// so any API (including nested runs) may be called from a callout.
final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    @inline(__always)
    func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        #if DEBUG
        // Cleared before the unlock above (defers run last first).
        holder.store(UInt(pthread_self()), ordering: .relaxed)
        defer { holder.store(0, ordering: .relaxed) }
        #endif
        return try body()
    }

    #if DEBUG
    /// The thread holding the lock (debug builds only), for `assertHeld()`.
    private let holder = Atomic<UInt>(0)
    #endif

    /// Debug builds: traps unless the calling thread holds the lock. The state some hot types keep with
    /// unchecked exclusivity relies on this lock alone; their `…Locked` accessors assert it.
    @inline(__always)
    func assertHeld(_ file: StaticString = #fileID, _ line: UInt = #line) {
        #if DEBUG
        precondition(holder.load(ordering: .relaxed) == UInt(pthread_self()), "RunLoopKit: loop lock not held", file: file, line: line)
        #endif
    }
}
