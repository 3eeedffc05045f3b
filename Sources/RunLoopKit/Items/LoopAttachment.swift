import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The single loop a timer or observer belongs to (CFRunLoop allows one loop per timer and observer,
/// in any number of its modes). It also guards the item's state before it is first scheduled.
///
/// One atomic word stored inline in the item: 0 when unclaimed, the claiming loop's address when
/// claimed, or ``busy`` while a short section holds it (reading the claimant, or touching an unclaimed
/// item's state). Claiming and releasing, which every add and remove does, are one compare-exchange
/// each, where a mutex took a lock and an unlock each (see Benchmarks/RESULTS.md for the count).
/// The busy sections are a few instructions long, so a thread that finds the word busy yields and
/// tries again rather than sleeping.
///
/// The claim is an unretained reference: no weak reference to write, load and destroy each time a
/// timer is removed and added again (a timeout re-armed per message), and no reference counting. It is
/// safe because a claim never outlives its loop: a loop's teardown (at its thread's exit, before the
/// thread's reference to the loop goes) releases every item it holds, and an add that loses the race
/// with teardown releases its claim itself, while the caller still holds the loop. ``loop`` retains
/// the loop while the word is busy, and a release waits for the word to be free, so a concurrent
/// teardown cannot free the loop in between. Debug builds keep a weak reference beside it and trap if a
/// claim ever outlives its loop.
struct LoopAttachment: ~Copyable, @unchecked Sendable {
    private let word = Atomic<UInt>(Self.unclaimed)
    #if DEBUG
    private let check = Mutex(ClaimCheck())
    #endif

    private static let unclaimed: UInt = 0
    /// Never a loop's address: objects are aligned to at least 8 bytes.
    private static let busy: UInt = 1

    @inline(__always)
    private static func address(of loop: RunLoop) -> UInt {
        UInt(bitPattern: Unmanaged.passUnretained(loop).toOpaque())
    }

    var loop: RunLoop? {
        while true {
            let current = word.load(ordering: .acquiring)
            if current == Self.unclaimed { return nil }
            if current == Self.busy {
                sched_yield()
                continue
            }
            guard word.compareExchange(expected: current, desired: Self.busy, ordering: .acquiring).exchanged else { continue }
            #if DEBUG
            precondition(check.withLock { $0.loop != nil }, "RunLoopKit: an item's loop claim outlived the loop")
            #endif
            // Retained explicitly before the word is handed back: a release waiting for it may be the
            // teardown's, and the loop may go right after it.
            let loop = Unmanaged<RunLoop>.fromOpaque(UnsafeRawPointer(bitPattern: current)!).retain()
            word.store(current, ordering: .releasing)
            return loop.takeRetainedValue()
        }
    }

    /// Claims the item for `loop`; false if another loop has it.
    func claim(for loop: RunLoop) -> Bool {
        let mine = Self.address(of: loop)
        // Debug builds set the check while the word is busy, so no reader sees the claim without it.
        #if DEBUG
        let claimed = Self.busy
        #else
        let claimed = mine
        #endif
        while true {
            let (exchanged, current) = word.compareExchange(
                expected: Self.unclaimed, desired: claimed, ordering: .acquiringAndReleasing)
            if exchanged {
                #if DEBUG
                check.withLock { $0.loop = loop }
                word.store(mine, ordering: .releasing)
                #endif
                return true
            }
            if current != Self.busy { return current == mine }
            sched_yield()
        }
    }

    /// Releases the claim, whichever loop holds it.
    func release() {
        while true {
            let current = word.load(ordering: .relaxed)
            if current == Self.unclaimed { return }
            if current == Self.busy {
                sched_yield()
                continue
            }
            if word.compareExchange(expected: current, desired: Self.unclaimed, ordering: .releasing).exchanged { return }
        }
    }

    /// Releases the claim if `loop` holds it.
    func release(ifClaimedBy loop: RunLoop) {
        let mine = Self.address(of: loop)
        while true {
            let (exchanged, current) = word.compareExchange(
                expected: mine, desired: Self.unclaimed, ordering: .releasing)
            if exchanged || current != Self.busy { return }
            sched_yield()
        }
    }

    /// Whether `loop` holds the claim.
    func isClaimed(by loop: RunLoop) -> Bool {
        while true {
            let current = word.load(ordering: .acquiring)
            if current != Self.busy { return current == Self.address(of: loop) }
            sched_yield()
        }
    }

    /// Runs `body` while holding the word if no loop holds the claim; nil (and `body` not run) if one
    /// does. The check and the body are one critical section: state that a loop guards once it claims
    /// the item can be touched here without racing a concurrent `add`.
    func ifUnclaimed<Result: Sendable>(_ body: () -> Result) -> Result? {
        while true {
            let (exchanged, current) = word.compareExchange(
                expected: Self.unclaimed, desired: Self.busy, ordering: .acquiring)
            if exchanged {
                let result = body()
                word.store(Self.unclaimed, ordering: .releasing)
                return result
            }
            if current != Self.busy { return nil }
            sched_yield()
        }
    }
}

#if DEBUG
/// The claiming loop, weakly (debug builds: a claim must never outlive its loop). Top level rather than
/// nested and private: the Swift 6.3.1 compiler emits a broken type-metadata symbol for the nested form
/// inside `Mutex`.
struct ClaimCheck {
    weak var loop: RunLoop?
}
#endif
