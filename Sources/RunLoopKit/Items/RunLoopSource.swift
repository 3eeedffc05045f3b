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
    public func signal() {
        guard isValid, signalStamp.load(ordering: .relaxed) == 0 else { return }
        // Wrapping: `add` traps on overflow, which made it a compare-and-exchange loop; this is one
        // locked add. A billion signals a second would take 584 years to wrap.
        let stamp = signalSequence.wrappingAdd(1, ordering: .relaxed).newValue
        // A plain store, not a compare-and-exchange: one locked instruction less per signal. Only the
        // loop's take (an exchange) clears the stamp, so two signallers that both saw 0 both store a
        // stamp of a signal that came before the next perform, and the later one's place in line is
        // as good as the earlier one's: they raced. A take between the load and this store served an
        // earlier signal, so this one is performed again, as it would be had it come just after.
        signalStamp.store(stamp, ordering: .releasing)
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
    /// the source is on, one takes each signal.
    @inline(__always)
    func takeSignal() -> Bool {
        // A plain load first: an unsignalled source costs no locked instruction. A signal stored after
        // the load is seen by the next pass, as it would be had it come just after an exchange.
        signalStamp.load(ordering: .relaxed) != 0 && signalStamp.exchange(0, ordering: .acquiringAndReleasing) != 0
    }
}

private let signalSequence = Atomic<UInt64>(0)
