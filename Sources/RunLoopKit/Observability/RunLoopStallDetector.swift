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
/// `runloop.stalls`.
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

        public var description: String {
            "iteration in mode \(mode) (depth \(depth)) busy for \(busy): \(labels.joined(separator: ", "))"
        }
    }

    /// Iterations busy for longer than this are reported.
    public let threshold: Duration
    private let logger: Logger?
    private let onStall: ((Stall) -> Void)?
    private let metricsFactory: any MetricsFactory
    private let lock = Lock()
    private var attachedLoop: RunLoop?
    private var observers: [RunLoopObserver] = []
    private var calloutObserver: RunLoopCalloutObserver?

    // Loop thread only.
    private var frames: [Frame] = []
    private var metricsByMode: [RunLoop.Mode: ModeMetrics] = [:]

    private struct Frame {
        let mode: RunLoop.Mode
        var iterationStart: LoopInstant?
        var sleepStart: LoopInstant?
        var asleep: Duration = .zero
        var callouts: [RunLoop.Callout] = []
    }

    private struct ModeMetrics {
        let iterations: Counter
        let busy: CoreMetrics.Timer
        let asleep: CoreMetrics.Timer
        let stalls: Counter
        var callouts: [RunLoop.CalloutKind: CoreMetrics.Timer] = [:]
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
        let ownItems: Set<ObjectIdentifier> = [ObjectIdentifier(early), ObjectIdentifier(late)]
        let callouts = RunLoopCalloutObserver(label: "stall detector") { [unowned self] callout in
            guard callout.end != nil else { return }
            if let item = callout.item, ownItems.contains(item) { return }
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

    /// Stops watching. Safe from any thread.
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
        let now = loop.now
        switch activity {
        case .entry:
            frames.append(Frame(mode: loop.currentMode ?? .default))
        case .beforeTimers:
            finishIteration(at: now)
            if !frames.isEmpty { frames[frames.count - 1].iterationStart = now }
        case .beforeWaiting:
            if !frames.isEmpty { frames[frames.count - 1].sleepStart = now }
        case .afterWaiting:
            guard let top = frames.last, let sleepStart = top.sleepStart else { return }
            let slept = now - sleepStart
            // Outer iterations were waiting too: a nested run's sleep is not their work.
            for index in frames.indices { frames[index].asleep += slept }
            frames[frames.count - 1].sleepStart = nil
            metrics(for: top.mode).asleep.recordNanoseconds(slept.clampedNanoseconds)
        case .exit:
            finishIteration(at: now)
            if !frames.isEmpty { frames.removeLast() }
        default:
            break
        }
    }

    private func record(_ callout: RunLoop.Callout) {
        var modeMetrics = metrics(for: callout.mode)
        if modeMetrics.callouts[callout.kind] == nil {
            modeMetrics.callouts[callout.kind] = CoreMetrics.Timer(
                label: "runloop.callout", dimensions: [("mode", callout.mode.rawValue), ("kind", callout.kind.rawValue)],
                factory: metricsFactory)
            metricsByMode[callout.mode] = modeMetrics
        }
        modeMetrics.callouts[callout.kind]?.recordNanoseconds(callout.duration.clampedNanoseconds)
        guard callout.depth == frames.count, !frames.isEmpty else { return }
        frames[frames.count - 1].callouts.append(callout)
    }

    private func finishIteration(at now: LoopInstant) {
        guard var frame = frames.last, let start = frame.iterationStart else { return }
        let busy = (now - start) - frame.asleep
        let modeMetrics = metrics(for: frame.mode)
        modeMetrics.iterations.increment()
        modeMetrics.busy.recordNanoseconds(busy.clampedNanoseconds)
        if busy > threshold {
            modeMetrics.stalls.increment()
            let stall = Stall(
                mode: frame.mode, depth: frames.count, start: start, busy: busy,
                callouts: frame.callouts.sorted { $0.duration > $1.duration })
            logger?.warning(
                "run loop stalled",
                metadata: [
                    "mode": "\(stall.mode)", "busy": "\(stall.busy)", "depth": "\(stall.depth)",
                    "callouts": "\(stall.labels.joined(separator: ", "))"
                ])
            onStall?(stall)
        }
        frame.iterationStart = nil
        frame.asleep = .zero
        frame.callouts.removeAll(keepingCapacity: true)
        frames[frames.count - 1] = frame
    }

    private func metrics(for mode: RunLoop.Mode) -> ModeMetrics {
        if let existing = metricsByMode[mode] { return existing }
        let dimensions = [("mode", mode.rawValue)]
        let created = ModeMetrics(
            iterations: Counter(label: "runloop.iterations", dimensions: dimensions, factory: metricsFactory),
            busy: CoreMetrics.Timer(label: "runloop.busy", dimensions: dimensions, factory: metricsFactory),
            asleep: CoreMetrics.Timer(label: "runloop.asleep", dimensions: dimensions, factory: metricsFactory),
            stalls: Counter(label: "runloop.stalls", dimensions: dimensions, factory: metricsFactory))
        metricsByMode[mode] = created
        return created
    }
}
