import Synchronization

/// A clock that moves only when told to, for deterministic tests of timers and timeouts.
///
/// Attach it with ``RunLoop/setClock(_:)``. While a loop on this clock would sleep until a deadline
/// (its next timer, or the end of its run), one of two things happens:
/// - with `autoAdvances` (the default), if no descriptor is ready and nobody woke the loop, the clock
///   jumps straight to that deadline, so a test covering an hour of timers finishes in microseconds;
/// - without it, the loop blocks until ``advance(by:)`` or ``advance(to:)`` is called (from any
///   thread), or a descriptor or wake-up arrives.
///
/// Time never passes inside a callout unless the callout advances the clock itself, which is how a
/// test simulates a slow callback.
///
/// Thread safety: every member may be called from any thread.
public final class ManualClock: Sendable {
    private let state: Mutex<State>
    /// When true, a loop that has nothing to do jumps the clock to its next deadline.
    public let autoAdvances: Bool

    private struct State {
        var now: UInt64
        var listeners: [WeakLoop] = []
    }

    /// - Parameters:
    ///   - start: the first reading; the default leaves room for instants before it.
    ///   - autoAdvances: whether an idle loop jumps the clock to its next deadline.
    public init(start: LoopInstant = LoopInstant(nanoseconds: 1_000_000_000_000), autoAdvances: Bool = true) {
        state = Mutex(State(now: start.nanoseconds))
        self.autoAdvances = autoAdvances
    }

    /// The current reading.
    public var now: LoopInstant { LoopInstant(nanoseconds: nowNanoseconds) }

    var nowNanoseconds: UInt64 { state.withLock { $0.now } }

    /// Moves the clock forward (never backward) and wakes every loop using it (but the caller's own).
    public func advance(by duration: Duration) {
        let delta = max(0, duration.clampedNanoseconds)
        move { $0.adding(nanoseconds: delta) }
    }

    /// Moves the clock to `instant` if that is later than now, and wakes every loop using it.
    public func advance(to instant: LoopInstant) {
        move { max($0, instant.nanoseconds) }
    }

    /// Used by a loop that jumps the clock itself: it needs no wake-up, the others do.
    func advance(to instant: LoopInstant, waking mover: RunLoop) {
        move(except: mover) { max($0, instant.nanoseconds) }
    }

    private func move(except mover: RunLoop? = nil, _ next: (UInt64) -> UInt64) {
        let loops: [RunLoop] = state.withLock { state in
            state.now = next(state.now)
            state.listeners.removeAll { $0.loop == nil }
            return state.listeners.compactMap(\.loop)
        }
        // A loop advanced from its own thread is not asleep and re-checks its deadlines before it
        // sleeps again; waking it would only add a spurious wake-up cycle.
        for loop in loops where loop !== mover && !loop.isCurrentThread { loop.wakeUp() }
    }

    func attach(_ loop: RunLoop) {
        state.withLock { $0.listeners.append(WeakLoop(loop)) }
    }

    func detach(_ loop: RunLoop) {
        state.withLock { $0.listeners.removeAll { $0.loop == nil || $0.loop === loop } }
    }
}

struct WeakLoop: @unchecked Sendable {
    weak var loop: RunLoop?
    init(_ loop: RunLoop) { self.loop = loop }
}
