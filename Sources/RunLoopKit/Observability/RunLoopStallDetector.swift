public import CoreMetrics
public import Logging

/// Reports loop iterations whose work took longer than a threshold, and records loop health metrics.
///
/// A daemon's loop thread must come back to its wait often: an iteration that stays busy for long
/// delays every timer and socket of the loop. The detector measures each iteration's busy time —
/// from its `beforeTimers` to the next one (or the activation's exit), minus the time spent asleep,
/// nested runs' sleeps included — and reports a ``Stall`` with the mode and the labels of what ran,
/// slowest first, through `onStall` and a warning on the logger.
///
/// Metrics (swift-metrics, dimension `mode`): counter `runloop.iterations`, timers `runloop.busy` and
/// `runloop.asleep` (per iteration and per wait), timer `runloop.callout` (dimension `kind` too), counter
/// `runloop.stalls`. Every iteration, wait and callout is counted, but the values are kept on the loop's
/// thread and handed to the metrics in batches — at the first iteration at least ``publishInterval``
/// after the last batch, and when the outermost activation exits — so an idle loop that wakes for one
/// event at a time does not touch the metrics backend (locks, cold histograms) on every pass. Metrics
/// read while the loop runs may therefore lag it by that interval, or until its next iteration when
/// it sleeps longer. Stalls are counted and reported at once.
///
/// It is built on the observer APIs (``RunLoopObserver``, ``RunLoopCalloutObserver``), so it costs
/// nothing while detached. Attached, a callout costs it a value stored in a preallocated list (and the
/// callout kept for the iteration's report), and a pass three clock reads and a few stores; its own
/// observers' callouts are not measured unless another callout observer wants them. Times come from
/// the loop's clock, so tests can drive it with a ``ManualClock``.
///
/// Thread safety: ``attach(to:modes:)`` and ``detach()`` may be called from any thread; the bookkeeping
/// and `onStall` run on the loop's thread.
public final class RunLoopStallDetector: @unchecked Sendable {
    /// One iteration that stayed busy longer than the threshold.
    public struct Stall: Sendable, CustomStringConvertible {
        public let mode: RunLoop.Mode
        /// 1 for the outermost activation, more inside nested runs.
        public let depth: Int
        /// When the iteration began.
        public let start: LoopInstant
        /// Time spent working (the iteration's length minus its sleeps).
        public let busy: Duration
        /// The callouts the iteration made, slowest first.
        public let callouts: [RunLoop.Callout]

        /// The labels (or kinds, for unlabelled items) of what ran, slowest first, each once.
        public var labels: [String] {
            var seen: Set<String> = []
            return callouts.map { $0.label ?? $0.kind.rawValue }.filter { seen.insert($0).inserted }
        }

        /// The slowest `limit` of ``labels`` and how many others there were, for a log line.
        ///
        /// One pass can run a callout per connection — a mass disconnect reads every closed socket in
        /// one pass — and labels that name the descriptor are all distinct: 16,700 of them made one
        /// stall line 400 KB long. The slowest few say where the time went; the count says how wide the
        /// pass was.
        public func summary(limit: Int = Stall.summaryLimit) -> String {
            let all = labels
            guard all.count > limit else { return all.joined(separator: ", ") }
            return all.prefix(limit).joined(separator: ", ") + " and \(all.count - limit) more"
        }

        /// How many labels ``summary(limit:)`` names by default, in the detector's log line too.
        public static let summaryLimit = 10

        public var description: String {
            "iteration in mode \(mode) (depth \(depth)) busy for \(busy): \(summary())"
        }
    }

    /// Iterations busy for longer than this are reported.
    public let threshold: Duration
    /// How long iteration, wait and callout values may wait on the loop's thread before they are
    /// handed to the metrics (one second).
    public static let publishInterval = Duration.seconds(1)
    private let lock = Lock()
    private var attachedLoop: RunLoop?
    private var observers: [RunLoopObserver] = []
    private var calloutObserver: RunLoopCalloutObserver?
    /// What the observers update, on the loop's thread.
    private let bookkeeping: StallBookkeeping

    /// The most values a list of the detector keeps room for between iterations (or batches): a
    /// wider pass's room goes back to the allocator.
    package static let keptRoom = 1_024

    /// The room the innermost activation's callout list holds between iterations. Loop thread only.
    package var calloutRoom: Int { bookkeeping.calloutRoom }

    /// - Parameters:
    ///   - threshold: iterations busy for longer are reported.
    ///   - logger: where stalls are logged (warning); nil for no logging.
    ///   - metricsFactory: where metrics go; the process-wide `MetricsSystem.factory` by default.
    ///   - onStall: called on the loop's thread for each stall.
    public init(
        threshold: Duration,
        logger: Logger? = Logger(label: "RunLoopKit.stall"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        onStall: ((Stall) -> Void)? = nil
    ) {
        self.threshold = threshold
        bookkeeping = StallBookkeeping(threshold: threshold, logger: logger, metricsFactory: metricsFactory, onStall: onStall)
    }

    /// Starts watching `loop` in `modes` (the common modes by default). A detector watches one loop;
    /// keep it alive while it is attached, and ``detach()`` it before releasing it.
    public func attach(to loop: RunLoop, modes: [RunLoop.Mode] = [.common]) {
        // Starts first and ends last, so other observers' callouts count as the iteration's work.
        let bookkeeping = bookkeeping
        let early = RunLoopObserver(activities: [.entry, .beforeTimers, .afterWaiting], order: .min, label: "stall detector") {
            _, activity in bookkeeping.observe(activity, on: loop)
        }
        let late = RunLoopObserver(activities: [.beforeWaiting, .exit], order: .max, label: "stall detector") {
            _, activity in bookkeeping.observe(activity, on: loop)
        }
        // Its own observers' callouts are not reported to it at all: no clock read, no report, three
        // times a pass.
        let callouts = RunLoopCalloutObserver(
            label: "stall detector", reportsBeginnings: false, ignoring: [ObjectIdentifier(early), ObjectIdentifier(late)]
        ) { callout in bookkeeping.record(callout) }
        lock.withLock {
            attachedLoop = loop
            observers = [early, late]
            calloutObserver = callouts
        }
        for mode in modes {
            loop.add(early, forMode: mode)
            loop.add(late, forMode: mode)
        }
        loop.add(callouts)
    }

    /// Stops watching. Safe from any thread. Values gathered since the last batch are published only
    /// if the loop's outermost activation exits before the detachment.
    public func detach() {
        let (observers, callouts) = lock.withLock { () -> ([RunLoopObserver], RunLoopCalloutObserver?) in
            defer {
                self.observers = []
                calloutObserver = nil
                attachedLoop = nil
            }
            return (self.observers, calloutObserver)
        }
        for observer in observers { observer.invalidate() }
        callouts?.invalidate()
    }

    deinit {
        for observer in observers { observer.invalidate() }
        calloutObserver?.invalidate()
    }
}
