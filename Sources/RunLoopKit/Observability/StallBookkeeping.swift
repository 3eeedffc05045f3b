import CoreMetrics
import Logging

/// A ``RunLoopStallDetector``'s loop-thread state: the activations being watched, their iterations'
/// timing and callouts, and each mode's metrics. The detector's observers hold it strongly, so each
/// notification reaches it with no retain of an `unowned` reference, and it holds nothing of theirs.
///
/// It runs three or four times a loop pass and once per callout, so it counts in nanoseconds of the
/// loop's clock (`Duration` arithmetic and its 128-bit conversion were a fifth of its cost on an idle
/// chat node, issue 22), reads that clock without the loop's lock, and keeps its lists in buffers
/// with no runtime checks. Loop thread only.
final class StallBookkeeping {
    /// One activation of the loop being watched.
    final class Frame {
        let mode: RunLoop.Mode
        /// The mode's metrics, found once per activation rather than once per activity.
        let metrics: StallModeMetrics
        /// When the current iteration began, on the loop's clock; `nil` between iterations.
        @exclusivity(unchecked) var iterationStart: UInt64?
        @exclusivity(unchecked) var sleepStart: UInt64?
        /// Nanoseconds of the current iteration spent asleep, nested runs' sleeps included.
        @exclusivity(unchecked) var asleep: Int64 = 0
        /// The iteration's callouts at this activation's depth, for a stall's report.
        let callouts = LoopThreadBuffer<RunLoop.Callout>()

        init(mode: RunLoop.Mode, metrics: StallModeMetrics) {
            self.mode = mode
            self.metrics = metrics
        }
    }

    private let thresholdNanoseconds: Int64
    private let publishIntervalNanoseconds = RunLoopStallDetector.publishInterval.clampedNanoseconds
    private let logger: Logger?
    private let onStall: ((RunLoopStallDetector.Stall) -> Void)?
    private let metricsFactory: any MetricsFactory
    /// The activations being watched, the innermost last; objects, so a pass updates its frame in place
    /// instead of copying it (and its callout list) out of the array and back.
    @exclusivity(unchecked) private(set) var frames: [Frame] = []
    @exclusivity(unchecked) private var metricsByMode: [RunLoop.Mode: StallModeMetrics] = [:]
    /// When the next batch is due; 0 publishes at the first iteration.
    @exclusivity(unchecked) private var nextPublish: UInt64 = 0

    init(
        threshold: Duration, logger: Logger?, metricsFactory: any MetricsFactory,
        onStall: ((RunLoopStallDetector.Stall) -> Void)?
    ) {
        thresholdNanoseconds = threshold.clampedNanoseconds
        self.logger = logger
        self.metricsFactory = metricsFactory
        self.onStall = onStall
    }

    func observe(_ activity: RunLoop.Activity, on loop: RunLoop) {
        // On the loop's thread, the only one that may change its clock (`setClock`, not while it runs).
        let now = loop.clockStorage.nowNanoseconds
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
            top.metrics.recordSleep(slept)
        case .exit:
            if let top = frames.popLast() { finishIteration(of: top, at: now) }
            // Nothing may wait for a next iteration that might never come.
            if frames.isEmpty { publish(at: now) }
        default:
            break
        }
    }

    /// Records a finished callout: its duration for its mode's `runloop.callout`, and the callout in
    /// the innermost watched activation's list if it ran at that depth.
    func record(_ callout: RunLoop.Callout) {
        guard let end = callout.end else { return }
        let duration = Self.nanoseconds(from: callout.start.nanoseconds, to: end.nanoseconds)
        let kind = StallModeMetrics.place(of: callout.kind)
        guard let top = frames.last else {
            metrics(for: callout.mode).recordCallout(kind: kind, duration)
            return
        }
        // The same string storage as the frame's (both are the store's mode): compared by its bits.
        let metrics = top.mode == callout.mode ? top.metrics : metrics(for: callout.mode)
        metrics.recordCallout(kind: kind, duration)
        if callout.depth == frames.count { top.callouts.append(callout) }
    }

    /// The innermost activation's callout list's room. For tests.
    var calloutRoom: Int { frames.last?.callouts.capacity ?? 0 }

    /// Ends `frame`'s iteration, if one is under way (its activation's exit or the next iteration's
    /// start): counts it, and reports it if it stalled.
    private func finishIteration(of frame: Frame, at now: UInt64) {
        guard let start = frame.iterationStart else { return }
        let busy = Self.nanoseconds(from: start, to: now) - frame.asleep
        frame.metrics.recordIteration(busy: busy)
        if busy > thresholdNanoseconds { report(frame, start: start, busy: busy) }
        frame.iterationStart = nil
        frame.asleep = 0
        if !frame.callouts.isEmpty { frame.callouts.removeAll(keepingCapacityUpTo: RunLoopStallDetector.keptRoom) }
        if now >= nextPublish { publish(at: now) }
    }

    private func report(_ frame: Frame, start: UInt64, busy: Int64) {
        frame.metrics.countStall()
        // The frame is on the stack while it is reported, or was just taken off it at its exit.
        let depth = frames.last === frame ? frames.count : frames.count + 1
        let stall = RunLoopStallDetector.Stall(
            mode: frame.mode, depth: depth, start: LoopInstant(nanoseconds: start), busy: .nanoseconds(busy),
            callouts: frame.callouts.elements.sorted { $0.duration > $1.duration })
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
        nextPublish = now.adding(nanoseconds: publishIntervalNanoseconds)
    }

    private func metrics(for mode: RunLoop.Mode) -> StallModeMetrics {
        if let existing = metricsByMode[mode] { return existing }
        let created = StallModeMetrics(mode: mode, factory: metricsFactory)
        metricsByMode[mode] = created
        return created
    }

    /// `end − start` in nanoseconds, negative if the clock went back, as `LoopInstant`'s difference.
    @inline(__always)
    private static func nanoseconds(from start: UInt64, to end: UInt64) -> Int64 {
        end >= start ? Int64(clamping: end - start) : -Int64(clamping: start - end)
    }
}
