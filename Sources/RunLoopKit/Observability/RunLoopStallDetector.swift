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
/// It is built on the public observer APIs (``RunLoopObserver``, ``RunLoopCalloutObserver``), so it costs
/// nothing while detached. Times come from the loop's clock, so tests can drive it with a ``ManualClock``.
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
    private let logger: Logger?
    private let onStall: ((Stall) -> Void)?
    private let metricsFactory: any MetricsFactory
    private let lock = Lock()
    private var attachedLoop: RunLoop?
    private var observers: [RunLoopObserver] = []
    private var calloutObserver: RunLoopCalloutObserver?

    /// The most values a list of the detector keeps room for between iterations (or batches): a
    /// wider pass's room goes back to the allocator.
    package static let keptRoom = 1_024

    /// The room the innermost activation's callout list holds between iterations. Loop thread only.
    package var calloutRoom: Int { frames.last?.callouts.capacity ?? 0 }

    // Loop thread only. The bookkeeping runs three or four times in every loop pass, so it counts in
    // nanoseconds of the loop's clock: `Duration` arithmetic and its conversion to nanoseconds for the
    // metrics (a 128-bit division) were a fifth of its cost on an idle chat node (issue 22).
    private let thresholdNanoseconds: Int64
    private let publishIntervalNanoseconds = UInt64(RunLoopStallDetector.publishInterval.clampedNanoseconds)
    /// The activations being watched, the innermost last; objects, so a pass updates its frame in place
    /// instead of copying it (and its callout list) out of the array and back.
    private var frames: [Frame] = []
    private var metricsByMode: [RunLoop.Mode: ModeMetrics] = [:]
    private var nextPublish: UInt64?

    /// One activation of the loop being watched. Loop thread only.
    private final class Frame {
        let mode: RunLoop.Mode
        /// The mode's metrics, found once per activation rather than once per activity.
        let metrics: ModeMetrics
        /// When the current iteration began, on the loop's clock; `nil` between iterations.
        var iterationStart: UInt64?
        var sleepStart: UInt64?
        /// Nanoseconds of the current iteration spent asleep, nested runs' sleeps included.
        var asleep: Int64 = 0
        var callouts: [RunLoop.Callout] = []

        init(mode: RunLoop.Mode, metrics: ModeMetrics) {
            self.mode = mode
            self.metrics = metrics
        }
    }

    /// One mode's metrics with the values not yet published. Loop thread only.
    private final class ModeMetrics {
        let iterations: Counter
        var unpublishedIterations: Int64 = 0
        let busy: BatchedTimer
        let asleep: BatchedTimer
        let stalls: Counter
        /// By ``RunLoop/CalloutKind``, in `allCases` order, each made when its kind first runs: an
        /// array indexed by the kind's place, where a dictionary hashed the kind's raw string for
        /// every callout.
        var callouts: [BatchedTimer?] = Array(repeating: nil, count: RunLoop.CalloutKind.allCases.count)

        init(iterations: Counter, busy: BatchedTimer, asleep: BatchedTimer, stalls: Counter) {
            self.iterations = iterations
            self.busy = busy
            self.asleep = asleep
            self.stalls = stalls
        }

        func publish() {
            if unpublishedIterations > 0 {
                iterations.increment(by: unpublishedIterations)
                unpublishedIterations = 0
            }
            busy.publish()
            asleep.publish()
            for timer in callouts { timer?.publish() }
        }
    }

    /// A timer whose durations, in nanoseconds, are kept until ``publish()``. Loop thread only.
    private final class BatchedTimer {
        let timer: CoreMetrics.Timer
        private var unpublished: [Int64] = []

        init(_ timer: CoreMetrics.Timer) { self.timer = timer }

        func record(nanoseconds: Int64) { unpublished.append(nanoseconds) }

        func publish() {
            for nanoseconds in unpublished { timer.recordNanoseconds(nanoseconds) }
            unpublished.removeAll(keepingCapacityUpTo: RunLoopStallDetector.keptRoom)
        }
    }

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
        self.logger = logger
        self.metricsFactory = metricsFactory
        self.onStall = onStall
        thresholdNanoseconds = threshold.clampedNanoseconds
    }

    /// Starts watching `loop` in `modes` (the common modes by default). A detector watches one loop;
    /// keep it alive while it is attached, and ``detach()`` it before releasing it.
    public func attach(to loop: RunLoop, modes: [RunLoop.Mode] = [.common]) {
        // Starts first and ends last, so other observers' callouts count as the iteration's work.
        let early = RunLoopObserver(activities: [.entry, .beforeTimers, .afterWaiting], order: .min, label: "stall detector") {
            [unowned self] _, activity in observe(activity, on: loop)
        }
        let late = RunLoopObserver(activities: [.beforeWaiting, .exit], order: .max, label: "stall detector") {
            [unowned self] _, activity in observe(activity, on: loop)
        }
        // Two comparisons, where a set of the two hashed the item for every callout of every pass.
        let earlyItem = ObjectIdentifier(early)
        let lateItem = ObjectIdentifier(late)
        let callouts = RunLoopCalloutObserver(label: "stall detector", reportsBeginnings: false) { [unowned self] callout in
            if let item = callout.item, item == earlyItem || item == lateItem { return }
            record(callout)
        }
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

    // MARK: bookkeeping (loop thread)

    private func observe(_ activity: RunLoop.Activity, on loop: RunLoop) {
        let now = loop.now.nanoseconds
        switch activity {
        case .entry:
            let mode = loop.currentMode ?? .default
            frames.append(Frame(mode: mode, metrics: metrics(for: mode)))
        case .beforeTimers:
            guard let top = frames.last else { return }
            finishIteration(of: top, at: now)
            top.iterationStart = now
        case .beforeWaiting:
            frames.last?.sleepStart = now
        case .afterWaiting:
            guard let top = frames.last, let sleepStart = top.sleepStart else { return }
            let slept = Self.nanoseconds(from: sleepStart, to: now)
            // Outer iterations were waiting too: a nested run's sleep is not their work.
            for frame in frames { frame.asleep += slept }
            top.sleepStart = nil
            top.metrics.asleep.record(nanoseconds: slept)
        case .exit:
            if let top = frames.popLast() { finishIteration(of: top, at: now) }
            // Nothing may wait for a next iteration that might never come.
            if frames.isEmpty { publish(at: now) }
        default:
            break
        }
    }

    private func record(_ callout: RunLoop.Callout) {
        guard let end = callout.end else { return }
        let top = frames.last
        let modeMetrics = top.flatMap { $0.mode == callout.mode ? $0.metrics : nil } ?? metrics(for: callout.mode)
        let duration = Self.nanoseconds(from: callout.start.nanoseconds, to: end.nanoseconds)
        let kind = Self.place(of: callout.kind)
        if let timer = modeMetrics.callouts[kind] {
            timer.record(nanoseconds: duration)
        } else {
            let timer = BatchedTimer(
                CoreMetrics.Timer(
                    label: "runloop.callout", dimensions: [("mode", callout.mode.rawValue), ("kind", callout.kind.rawValue)],
                    factory: metricsFactory))
            modeMetrics.callouts[kind] = timer
            timer.record(nanoseconds: duration)
        }
        guard let top, callout.depth == frames.count else { return }
        top.callouts.append(callout)
    }

    /// Ends `frame`'s iteration, if one is under way (its activation's exit or the next iteration's
    /// start): counts it, and reports it if it stalled.
    private func finishIteration(of frame: Frame, at now: UInt64) {
        guard let start = frame.iterationStart else { return }
        let busy = Self.nanoseconds(from: start, to: now) - frame.asleep
        frame.metrics.unpublishedIterations += 1
        frame.metrics.busy.record(nanoseconds: busy)
        if busy > thresholdNanoseconds { report(frame, start: start, busy: busy) }
        frame.iterationStart = nil
        frame.asleep = 0
        frame.callouts.removeAll(keepingCapacityUpTo: Self.keptRoom)
        if let nextPublish, now < nextPublish { return }
        publish(at: now)
    }

    private func report(_ frame: Frame, start: UInt64, busy: Int64) {
        frame.metrics.stalls.increment()
        // The frame is on the stack while it is reported, or was just taken off it at its exit.
        let depth = frames.last === frame ? frames.count : frames.count + 1
        let stall = Stall(
            mode: frame.mode, depth: depth, start: LoopInstant(nanoseconds: start), busy: .nanoseconds(busy),
            callouts: frame.callouts.sorted { $0.duration > $1.duration })
        logger?.warning(
            "run loop stalled",
            metadata: [
                "mode": "\(stall.mode)", "busy": "\(stall.busy)", "depth": "\(stall.depth)",
                "callouts": "\(stall.summary())", "calloutCount": "\(stall.callouts.count)"
            ])
        onStall?(stall)
    }

    private func publish(at now: UInt64) {
        for modeMetrics in metricsByMode.values { modeMetrics.publish() }
        nextPublish = now.adding(nanoseconds: Int64(clamping: publishIntervalNanoseconds))
    }

    /// `end − start` in nanoseconds, negative if the clock went back, as `LoopInstant`'s difference.
    private static func nanoseconds(from start: UInt64, to end: UInt64) -> Int64 {
        end >= start ? Int64(clamping: end - start) : -Int64(clamping: start - end)
    }

    private static func place(of kind: RunLoop.CalloutKind) -> Int {
        switch kind {
        case .timer: 0
        case .source: 1
        case .port: 2
        case .block: 3
        case .observer: 4
        }
    }

    private func metrics(for mode: RunLoop.Mode) -> ModeMetrics {
        if let existing = metricsByMode[mode] { return existing }
        let dimensions = [("mode", mode.rawValue)]
        let created = ModeMetrics(
            iterations: Counter(label: "runloop.iterations", dimensions: dimensions, factory: metricsFactory),
            busy: BatchedTimer(CoreMetrics.Timer(label: "runloop.busy", dimensions: dimensions, factory: metricsFactory)),
            asleep: BatchedTimer(CoreMetrics.Timer(label: "runloop.asleep", dimensions: dimensions, factory: metricsFactory)),
            stalls: Counter(label: "runloop.stalls", dimensions: dimensions, factory: metricsFactory))
        metricsByMode[mode] = created
        return created
    }
}
