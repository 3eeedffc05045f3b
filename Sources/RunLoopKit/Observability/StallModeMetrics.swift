import CoreMetrics

/// One mode's stall-detector metrics, with the values the loop gathered since the last batch.
///
/// Every iteration, wait and callout adds one value to a single list, tagged with the timer it is
/// for; ``publish()`` hands them to the timers in the order they came. A callout's value is a store
/// into a preallocated buffer: the timers, and the backend's lock and buckets, are reached once a
/// batch (issue 22). Loop thread only.
final class StallModeMetrics {
    /// One value waiting for its timer.
    private struct Pending {
        let nanoseconds: Int64
        /// ``Slot``'s raw value.
        let slot: Int
    }

    /// Which timer a pending value is for: `runloop.busy`, `runloop.asleep`, then `runloop.callout`
    /// of each ``RunLoop/CalloutKind`` (see ``place(of:)``).
    private enum Slot {
        static let busy = 0
        static let asleep = 1
        static let firstCallout = 2
    }

    let mode: RunLoop.Mode
    private let factory: any MetricsFactory
    private let iterations: Counter
    private let stalls: Counter
    private let busy: CoreMetrics.Timer
    private let asleep: CoreMetrics.Timer
    /// `runloop.callout` by kind, each made at the first batch holding a callout of its kind.
    @exclusivity(unchecked) private var callouts: [CoreMetrics.Timer?] = Array(
        repeating: nil, count: RunLoop.CalloutKind.allCases.count)
    @exclusivity(unchecked) private var unpublishedIterations: Int64 = 0
    private let unpublished = LoopThreadBuffer<Pending>()

    init(mode: RunLoop.Mode, factory: any MetricsFactory) {
        self.mode = mode
        self.factory = factory
        let dimensions = [("mode", mode.rawValue)]
        iterations = Counter(label: "runloop.iterations", dimensions: dimensions, factory: factory)
        busy = CoreMetrics.Timer(label: "runloop.busy", dimensions: dimensions, factory: factory)
        asleep = CoreMetrics.Timer(label: "runloop.asleep", dimensions: dimensions, factory: factory)
        stalls = Counter(label: "runloop.stalls", dimensions: dimensions, factory: factory)
    }

    /// Counts a finished iteration that was busy for `nanoseconds`.
    @inline(__always)
    func recordIteration(busy nanoseconds: Int64) {
        unpublishedIterations += 1
        unpublished.append(Pending(nanoseconds: nanoseconds, slot: Slot.busy))
    }

    @inline(__always)
    func recordSleep(_ nanoseconds: Int64) {
        unpublished.append(Pending(nanoseconds: nanoseconds, slot: Slot.asleep))
    }

    /// Records a finished callout; `kind` is ``place(of:)`` of its kind.
    @inline(__always)
    func recordCallout(kind: Int, _ nanoseconds: Int64) {
        unpublished.append(Pending(nanoseconds: nanoseconds, slot: Slot.firstCallout + kind))
    }

    /// Stalls are counted at once, not batched: they are rare and someone may be waiting for one.
    func countStall() { stalls.increment() }

    /// Hands what was gathered to the metrics.
    func publish() {
        if unpublishedIterations > 0 {
            iterations.increment(by: unpublishedIterations)
            unpublishedIterations = 0
        }
        for value in unpublished.elements { timer(for: value.slot).recordNanoseconds(value.nanoseconds) }
        unpublished.removeAll(keepingCapacityUpTo: RunLoopStallDetector.keptRoom)
    }

    private func timer(for slot: Int) -> CoreMetrics.Timer {
        switch slot {
        case Slot.busy: return busy
        case Slot.asleep: return asleep
        default:
            let kind = slot - Slot.firstCallout
            if let timer = callouts[kind] { return timer }
            let made = CoreMetrics.Timer(
                label: "runloop.callout",
                dimensions: [("mode", mode.rawValue), ("kind", RunLoop.CalloutKind.allCases[kind].rawValue)],
                factory: factory)
            callouts[kind] = made
            return made
        }
    }

    /// The kind's place in `allCases`: the callout timers are kept in an array, where a dictionary
    /// hashed the kind's raw string for every callout.
    @inline(__always)
    static func place(of kind: RunLoop.CalloutKind) -> Int {
        switch kind {
        case .timer: 0
        case .source: 1
        case .port: 2
        case .block: 3
        case .observer: 4
        }
    }
}
