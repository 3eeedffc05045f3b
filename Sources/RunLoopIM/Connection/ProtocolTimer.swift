import RunLoopIMCore
import RunLoopKit

/// The one timer a protocol machine needs: re-dated to the machine's next deadline after every input,
/// parked (far future) when it has none. One `RunLoopTimer` for the connection's life, in its modes,
/// so re-arming on every frame costs a heap update and no allocation.
///
/// Loop thread only. The timer holds its owner weakly through `action`; ``cancel()`` takes it off the loop.
final class ProtocolTimer {
    private let timer: RunLoopTimer
    private var scheduled: LoopInstant?

    init(loop: RunLoop, modes: [RunLoop.Mode], label: String, action: @escaping () -> Void) {
        // A year between repeats: every callout re-dates it, the interval only keeps it valid.
        timer = RunLoopTimer(fireAt: .distantFuture, repeating: .seconds(365 * 86_400), label: label) { _ in action() }
        for mode in modes { loop.add(timer, forMode: mode) }
    }

    deinit { timer.invalidate() }

    func schedule(at instant: LoopInstant?) {
        guard instant != scheduled else { return }
        scheduled = instant
        timer.nextFireDate = instant ?? .distantFuture
    }

    func cancel() { timer.invalidate() }
}
