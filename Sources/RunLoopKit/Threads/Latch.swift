#if canImport(Glibc)
import Glibc
#endif

/// A one-shot gate between threads: ``wait()`` blocks the calling thread until another thread calls
/// ``open()``; once open it stays open, and every later ``wait()`` returns at once.
///
/// For handing something over to a thread that must not go on before it is there — a loop created on
/// a new thread (``RunLoopThread``), a block performed on a loop (``RunLoopThread/performAndWait(label:_:)``).
/// Opening happens-before the return of every ``wait()`` it releases, so what the opener wrote first is
/// visible to the waiter.
///
/// Threads: any. ``wait()`` blocks, so never call it on a loop's thread for something only that loop
/// can do.
public final class Latch: @unchecked Sendable {
    // Allocated: a pthread mutex or condition must not move, and a stored property's address is not
    // guaranteed to stay put.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var isOpen = false

    /// A closed latch.
    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        // Timed waits measure on the monotonic clock: a wall-clock step must not stretch or cut them.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deinitialize(count: 1)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Opens the latch and releases every thread waiting on it. Idempotent.
    public func open() {
        pthread_mutex_lock(mutex)
        isOpen = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Blocks until the latch is open or `timeout` has passed; whether it is open.
    public func wait(timeout: Duration) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000)
        deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !isOpen {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { return isOpen }
        }
        return true
    }

    /// Blocks until the latch is open; returns at once if it already is.
    public func wait() {
        pthread_mutex_lock(mutex)
        while !isOpen { pthread_cond_wait(condition, mutex) }
        pthread_mutex_unlock(mutex)
    }
}
