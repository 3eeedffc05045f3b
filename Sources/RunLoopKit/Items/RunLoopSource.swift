import Synchronization

/// A custom source (CFRunLoop's version-0 source): work that some code marks ready with ``signal()``
/// and the loop performs on its thread.
///
/// When several signalled sources are ready in one iteration they are performed in ascending `order`,
/// equal orders in the order they were first signalled. A source performed by an iteration is
/// un-signalled before its callout, so it runs again only if signalled again.
///
/// `signal()` alone does not wake a sleeping loop (as in CFRunLoop): signal, then call
/// ``RunLoop/wakeUp()`` — or use ``signalAndWakeUp()``, which does both for every loop the source is on.
///
/// Thread safety: `signal()`, `signalAndWakeUp()`, `invalidate()` and `isValid` may be used from any
/// thread. `perform` runs on the loop's thread; `schedule` and `cancel` run on the thread that added,
/// removed or invalidated the source.
public final class RunLoopSource: RunLoopSourceBase, @unchecked Sendable {
    let performCallout: (RunLoopSource) -> Void
    /// 0 when not signalled; otherwise the position of the first signal in a process-wide sequence,
    /// which orders equal-order sources by signal time without reading a clock.
    let signalStamp = Atomic<UInt64>(0)

    /// - Parameters:
    ///   - order: lower orders are performed first.
    ///   - label: a name for traces.
    ///   - schedule: called when the source is added to a concrete mode (once per common mode when added
    ///     to ``RunLoop/Mode/common``).
    ///   - cancel: called when the source leaves a mode (removal, invalidation, loop teardown).
    ///   - perform: the work; runs on the loop's thread.
    public init(
        order: Int = 0,
        label: String? = nil,
        schedule: ((RunLoop, RunLoop.Mode) -> Void)? = nil,
        cancel: ((RunLoop, RunLoop.Mode) -> Void)? = nil,
        perform: @escaping (RunLoopSource) -> Void
    ) {
        self.performCallout = perform
        super.init(order: order, label: label, schedule: schedule, cancel: cancel)
    }

    /// Marks the source ready. Re-signalling a pending source keeps its place in line. Has no effect on
    /// an invalidated source. Does not wake a sleeping loop.
    ///
    /// What the calling thread wrote before `signal()` is visible to the perform that serves it, also
    /// when the source was already signalled by another thread, or another thread signalled it at the
    /// same moment.
    public func signal() {
        guard isValid else { return }
        // Why every path writes the stamp with a release read-modify-write, never a plain load or store
        // (the memory-order argument; `SignalVisibilityTests` checks it under the thread sanitizer):
        // the loop's take is an acquiring exchange, and between two takes every write to the stamp
        // is a signaller's RMW (`willInvalidate`'s store is the only plain one, and an invalidated source
        // is never performed). A release sequence goes on through RMWs, so the take, which reads the
        // last of them, synchronizes with every signal written since the previous take: each of them
        // happens-before the perform that serves it. A signal written after a take found 0 (and set a
        // new stamp) or a stamp set after that take (and joined it): served by a later take.
        // - Already signalled: `add(0)`, not a load. A load writes nothing a take could acquire from,
        //   and the caller's stores may still be in its store buffer when the load sees the stamp (x86
        //   reorders a store before a later load): the loop could take and perform in between, read the
        //   old data, and nothing would signal again. A fence would cost what the locked add costs
        //   (LLVM compiles this idempotent add to just that on x86: a locked `or` on the stack, then a load).
        // - Not signalled: a compare-and-exchange from 0, not a store. A store ends the release sequence
        //   before it: a signaller whose stamp it replaced would not be synchronized with the take.
        var stamp = signalStamp.load(ordering: .relaxed)
        while true {
            if stamp != 0 {
                stamp = signalStamp.wrappingAdd(0, ordering: .releasing).oldValue
                if stamp != 0 { return }
                // Taken since the load: this is a new signal.
            }
            // The position in the process-wide sequence orders equal-order sources by signal time: a
            // signal that happens-before another takes a smaller number (coherence of one atomic).
            // Wrapping: `add` traps on overflow, which made it a compare-and-exchange loop; this is one
            // locked add. A billion signals a second would take 584 years to wrap.
            let next = signalSequence.wrappingAdd(1, ordering: .relaxed).newValue
            let (stored, found) = signalStamp.compareExchange(expected: 0, desired: next, ordering: .releasing)
            if stored { return }
            stamp = found
        }
    }

    /// Signals the source, then wakes every loop it is scheduled on: the safe cross-thread hand-off.
    public func signalAndWakeUp() {
        signal()
        forEachAttachedLoop { $0.wakeUp() }
    }

    /// Whether the source is signalled and not yet performed.
    public var isSignalled: Bool { signalStamp.load(ordering: .acquiring) != 0 }

    override func willInvalidate() {
        signalStamp.store(0, ordering: .releasing)
    }

    /// Clears the signal; true if it was set. Only this exchange clears a stamp, so of several loops
    /// the source is on, one takes each signal; and, an acquiring read-modify-write, it synchronizes
    /// with every signal written since the previous take (see `signal()`). A load and a store in its
    /// place would let a signal written between them be erased unperformed.
    @inline(__always)
    func takeSignal() -> Bool {
        // A plain load first: an unsignalled source costs no locked instruction. A signal stored after
        // the load is seen by the next pass, as it would be had it come just after an exchange.
        signalStamp.load(ordering: .relaxed) != 0 && signalStamp.exchange(0, ordering: .acquiringAndReleasing) != 0
    }
}

private let signalSequence = Atomic<UInt64>(0)
