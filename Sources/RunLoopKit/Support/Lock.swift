import CRunLoopSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A plain mutex. The loop takes it for short critical sections and never holds it across a callout,
/// so any API (including nested runs) may be called from a callout.
///
/// A futex word rather than a `pthread_mutex_t`: taking and giving back an uncontended lock is one
/// locked instruction each, inlined, where glibc's mutex is two calls that also check the mutex kind
/// and keep its owner and user count (≈ 55 instructions per pair; the loop takes the lock once for a
/// timer's add and once for its remove). Contended, it sleeps in the kernel like glibc's default mutex
/// (which does not spin either): Drepper's "Futexes Are Tricky", mutex 3.
final class Lock: @unchecked Sendable {
    /// 0: free; 1: held; 2: held, and a thread may be asleep waiting for it.
    private let word: UnsafeMutablePointer<Atomic<UInt32>>

    private static let free: UInt32 = 0
    private static let held: UInt32 = 1
    private static let contended: UInt32 = 2

    init() {
        word = .allocate(capacity: 1)
        word.initialize(to: Atomic(Self.free))
    }

    deinit {
        word.deinitialize(count: 1)
        word.deallocate()
    }

    @inline(__always)
    func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        #if DEBUG
        // Cleared before the unlock above (defers run last first).
        holder.store(UInt(pthread_self()), ordering: .relaxed)
        defer { holder.store(0, ordering: .relaxed) }
        #endif
        return try body()
    }

    @inline(__always)
    private func lock() {
        if !word.pointee.compareExchange(expected: Self.free, desired: Self.held, ordering: .acquiring).exchanged {
            lockContended()
        }
    }

    /// Marks the lock contended and sleeps while it is held. Whoever takes it here leaves it marked
    /// contended (it cannot know whether others still sleep), so its unlock wakes one: at worst a
    /// wake-up nobody needed.
    @inline(never)
    private func lockContended() {
        while word.pointee.exchange(Self.contended, ordering: .acquiring) != Self.free {
            rlk_futex_wait(futexAddress, Self.contended)
        }
    }

    @inline(__always)
    private func unlock() {
        if word.pointee.exchange(Self.free, ordering: .releasing) == Self.contended { wakeOne() }
    }

    @inline(never)
    private func wakeOne() { rlk_futex_wake_one(futexAddress) }

    /// The word as the kernel sees it: an `Atomic<UInt32>` is laid out as a plain `UInt32`.
    private var futexAddress: UnsafeMutablePointer<UInt32> {
        UnsafeMutableRawPointer(word).assumingMemoryBound(to: UInt32.self)
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
