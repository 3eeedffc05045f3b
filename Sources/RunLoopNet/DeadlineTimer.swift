public import RunLoopKit

/// One re-armable deadline on a loop, in the owner's modes: a single repeating ``RunLoopTimer`` that is
/// re-dated instead of re-created, so arming a timeout per request or per stall does not allocate.
///
/// Moving the deadline later costs nothing: the timer fires at the old instant, sees the new one and
/// re-dates itself. Only an earlier deadline re-dates the timer at once. That is what lets a read timeout
/// be pushed back on every arrival of bytes for the price of a store.
///
/// Loop thread only. The timer holds this object weakly; the owner holds it strongly and must
/// ``cancel()`` it (or let it go) when done, which takes the timer off the loop. Public for the
/// modules above that keep deadlines of their own (RunLoopRedis's connect and command timeouts).
public final class DeadlineTimer {
    private let loop: RunLoop
    private let modes: [RunLoop.Mode]
    private let label: String
    private let action: () -> Void
    private var timer: RunLoopTimer?
    /// What the loop's timer is dated for; `distantFuture` while parked.
    private var scheduledAt = LoopInstant.distantFuture
    /// The deadline the owner asked for; `nil` when disarmed.
    public private(set) var deadline: LoopInstant?

    /// - Parameter action: runs on the loop's thread when the deadline passes; it may re-arm.
    public init(loop: RunLoop, modes: [RunLoop.Mode], label: String, action: @escaping () -> Void) {
        self.loop = loop
        self.modes = modes
        self.label = label
        self.action = action
    }

    deinit { timer?.invalidate() }

    /// Fires `action` at `instant` (replacing the deadline armed before).
    public func arm(at instant: LoopInstant) {
        deadline = instant
        guard let timer, timer.isValid else {
            // A day between repeats: the callout always re-dates it, the interval only keeps it alive.
            let timer = RunLoopTimer(fireAt: instant, repeating: .seconds(86_400), label: label) { [weak self] _ in
                self?.fired()
            }
            self.timer = timer
            scheduledAt = instant
            for mode in modes { loop.add(timer, forMode: mode) }
            return
        }
        if instant < scheduledAt {
            scheduledAt = instant
            timer.nextFireDate = instant
        }
    }

    /// Forgets the deadline; the timer stays on the loop, parked, to be re-armed cheaply.
    public func disarm() { deadline = nil }

    /// Forgets the deadline and takes the timer off the loop.
    public func cancel() {
        deadline = nil
        timer?.invalidate()
        timer = nil
    }

    private func fired() {
        guard let timer else { return }
        guard let deadline else { return park(timer) }
        if loop.now < deadline {
            scheduledAt = deadline
            timer.nextFireDate = deadline
            return
        }
        self.deadline = nil
        park(timer)
        action()
    }

    private func park(_ timer: RunLoopTimer) {
        scheduledAt = .distantFuture
        timer.nextFireDate = .distantFuture
    }
}
