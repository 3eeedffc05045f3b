/// Records what a loop does — every observer activity and every callout — with its mode, time,
/// iteration number and nesting depth: for assertions in tests, for export as a trace, and for the
/// timelines `loop-record` and the chat demo write.
///
/// Built only on RunLoopKit's public observer APIs (``RunLoopObserver`` for activities,
/// ``RunLoopCalloutObserver`` for callouts), so it works on any loop.
///
/// ```swift
/// let recorder = ActivityRecorder()
/// recorder.attach(to: loop, modes: ["M"])
/// loop.add(RunLoopTimer(after: .milliseconds(5), label: "tick") { _ in }, forMode: "M")
/// try loop.run("M", timeout: .seconds(1))
/// #expect(recorder.tokens == ["E", "BT", "BS", "BW", "AW", "T:tick", "X"])
/// ```
///
/// Callouts appear at the point they began (`T:label`, `S:label`, `P:label`, `B:label`, `O:label`;
/// just the letter for an unlabelled item); their end time is filled in when they return. The
/// recorder's own observer is left out.
///
/// Thread safety: attach, detach and every query may be used from any thread; recording happens on the
/// loop's thread.
public final class ActivityRecorder: @unchecked Sendable {
    /// One recorded activity or callout.
    public struct Event: Sendable, Hashable, CustomStringConvertible {
        public enum Kind: Sendable, Hashable {
            case activity(RunLoop.Activity)
            case callout(RunLoop.CalloutKind, label: String?)
        }

        public let kind: Kind
        public let mode: RunLoop.Mode
        /// When the activity was notified or the callout began, on the loop's clock.
        public let time: LoopInstant
        /// When a callout returned (nil for activities, and for a callout still running).
        public internal(set) var end: LoopInstant?
        /// The iteration of its activation (1 for the first; 0 for the entry activity).
        public let iteration: Int
        /// 1 for the outermost activation, 2 inside a nested run, and so on.
        public let depth: Int

        /// The short form used in traces: E BT BS BW AW X, or T:/S:/P:/B:/O: plus the label.
        public var token: String {
            switch kind {
            case .activity(let activity): return Self.token(for: activity)
            case .callout(let kind, let label):
                let letter = kind.names.letter
                return label.map { "\(letter):\($0)" } ?? letter
            }
        }

        /// Whether this is a callout that handled work (timer, source, port, block), not an observer.
        public var isWork: Bool {
            if case .callout(let kind, _) = kind { return kind != .observer }
            return false
        }

        public var description: String { token }

        /// An activity's short form in traces (E BT BS BW AW X): what test traces and exported
        /// timelines write for it.
        public static func token(for activity: RunLoop.Activity) -> String {
            switch activity {
            case .entry: return "E"
            case .beforeTimers: return "BT"
            case .beforeSources: return "BS"
            case .beforeWaiting: return "BW"
            case .afterWaiting: return "AW"
            case .exit: return "X"
            default: return "?\(activity.rawValue)"
            }
        }
    }

    /// One iteration: its activities and the work it handled.
    public struct Iteration: Sendable, CustomStringConvertible {
        public let mode: RunLoop.Mode
        public let depth: Int
        public let index: Int
        public let start: LoopInstant
        /// Every event of the iteration, in order (nested runs' events excluded).
        public let events: [Event]
        /// The timers, sources, ports and blocks it ran.
        public var handled: [Event] { events.filter(\.isWork) }
        /// Whether it slept (has a beforeWaiting/afterWaiting pair).
        public var slept: Bool { events.contains { $0.kind == .activity(.afterWaiting) } }

        public var description: String {
            "\(mode) #\(index) (depth \(depth)): \(events.map(\.token).joined(separator: " "))"
        }
    }

    /// A moment or a stretch of time that code marked with a human label — a protocol event
    /// ("heartbeat", "SEND_ACK"), an outage — drawn on the recording's lane beside what the loop did.
    public struct Mark: Sendable, Hashable {
        public let label: String
        /// More about it, for a details panel or a hover (nil: nothing more).
        public let detail: String?
        /// When it happened, or when the span began.
        public let time: LoopInstant
        /// When the span ended; nil for an instant, and for a span not yet ended.
        public internal(set) var end: LoopInstant?
        /// Whether it is a span (``ActivityRecorder/beginSpan(_:detail:at:)``), not an instant.
        public let isSpan: Bool
        /// The path across loops this instant is a step of (nil: none), which a timeline draws as arrows.
        public let flow: Flow?
    }

    /// Where a marked instant sits on a path that crosses loops — one message from its sender through
    /// a server to its recipients: every mark of the same ``path`` is a step of it, and each
    /// ``isArrival`` is joined by an arrow to the ``hop``'s departure it answers (the latest one made
    /// before it, on any lane: a frame sent again after a lost one arrives as the second).
    ///
    /// A value; any thread.
    public struct Flow: Sendable, Hashable {
        /// What the path follows, say a message's id.
        public let path: String
        /// The stretch of wire this step is one end of, named alike at both ends ("SEND alice").
        public let hop: String
        /// Whether the step is the hop's far end (a frame read), not its near one (a frame written).
        public let isArrival: Bool

        /// The step where `hop` starts: a frame of `path` written.
        public static func departure(_ path: String, hop: String) -> Flow { Flow(path: path, hop: hop, isArrival: false) }
        /// The step where `hop` ends: a frame of `path` read.
        public static func arrival(_ path: String, hop: String) -> Flow { Flow(path: path, hop: hop, isArrival: true) }
    }

    /// A span begun with ``ActivityRecorder/beginSpan(_:detail:at:)``, to hand to ``ActivityRecorder/endSpan(_:at:)``.
    public struct Span: Sendable, Hashable {
        fileprivate let index: Int
        fileprivate let generation: Int
    }

    private let lock = Lock()
    private var recorded: [Event] = []
    private var labelled: [Mark] = []
    private var generation = 0  // counts resets: a span begun before one is not ended after it
    private var frames: [Int] = []  // iteration counter per running activation
    private var openCallouts: [Int] = []  // indices of callouts that have begun and not returned
    private var observers: [RunLoopObserver] = []
    private var calloutObserver: RunLoopCalloutObserver?
    private var recordedModes: Set<RunLoop.Mode>? = nil
    private weak var loop: RunLoop?

    /// A recorder attached to nothing yet.
    public init() {}

    deinit {
        detach()
    }

    private func locked<Result>(_ body: () -> Result) -> Result {
        lock.withLock(body)
    }

    /// Starts recording `loop`.
    /// - Parameter modes: the modes to record (``RunLoop/Mode/common`` for every common mode, now and
    ///   later). `nil` records every mode the loop has now, plus the common modes.
    public func attach(to loop: RunLoop, modes: [RunLoop.Mode]? = nil) {
        detach()
        let targets = modes ?? (loop.allModes.filter { !loop.commonModes.contains($0) } + [.common])
        let observer = RunLoopObserver(activities: .allActivities, order: .min, label: "ActivityRecorder") {
            [unowned self] _, activity in record(activity, on: loop)
        }
        let callouts = RunLoopCalloutObserver(
            label: "ActivityRecorder", reportsBeginnings: true, ignoring: [ObjectIdentifier(observer)]
        ) { [unowned self] callout in record(callout, on: loop) }
        locked {
            self.loop = loop
            observers = [observer]
            calloutObserver = callouts
            recordedModes = Set(targets)
            frames = []
            openCallouts = []
        }
        for mode in targets { loop.add(observer, forMode: mode) }
        loop.add(callouts)
    }

    /// Stops recording; what was recorded stays. Safe from any thread.
    public func detach() {
        let (observers, callouts) = locked { () -> ([RunLoopObserver], RunLoopCalloutObserver?) in
            defer {
                self.observers = []
                calloutObserver = nil
            }
            return (self.observers, calloutObserver)
        }
        for observer in observers { observer.invalidate() }
        callouts?.invalidate()
    }

    /// Forgets what was recorded, marks too (keeps recording). A span begun before stays unended.
    public func reset() {
        locked {
            recorded.removeAll()
            openCallouts.removeAll()
            labelled.removeAll()
            generation += 1
        }
    }

    // MARK: marks

    /// Marks an instant with a human label, say a protocol event as it happens, and the step of a path
    /// across loops it is (`flow`), if any.
    ///
    /// Call it from the loop's thread with no `time` (the attached loop's clock says now), or from any
    /// thread with a `time` on that same clock.
    public func mark(_ label: String, detail: String? = nil, flow: Flow? = nil, at time: LoopInstant? = nil) {
        let instant = time ?? now()
        locked { labelled.append(Mark(label: label, detail: detail, time: instant, end: nil, isSpan: false, flow: flow)) }
    }

    /// Begins a labelled stretch of time (an outage, a wait); ``endSpan(_:at:)`` ends it. Threads and
    /// times as for ``mark(_:detail:flow:at:)``.
    @discardableResult
    public func beginSpan(_ label: String, detail: String? = nil, at time: LoopInstant? = nil) -> Span {
        let instant = time ?? now()
        return locked {
            labelled.append(Mark(label: label, detail: detail, time: instant, end: nil, isSpan: true, flow: nil))
            return Span(index: labelled.count - 1, generation: generation)
        }
    }

    /// Ends a span; one ended before, or forgotten by ``reset()``, is left as it is.
    public func endSpan(_ span: Span, at time: LoopInstant? = nil) {
        let instant = time ?? now()
        locked {
            guard span.generation == generation, span.index < labelled.count, labelled[span.index].end == nil else { return }
            labelled[span.index].end = max(instant, labelled[span.index].time)
        }
    }

    /// Every mark and span, in the order they were made.
    public var marks: [Mark] { locked { labelled } }

    /// The attached loop's now; a recorder never attached has no clock and uses the time of what it
    /// recorded last.
    private func now() -> LoopInstant {
        if let loop = locked({ loop }) { return loop.now }
        return locked { labelled.last?.time ?? recorded.last?.time ?? LoopInstant(nanoseconds: 0) }
    }

    /// Everything recorded, in order.
    public var events: [Event] { locked { recorded } }

    /// The recorded events as trace tokens ("E", "BT", "T:tick", …).
    public var tokens: [String] { events.map(\.token) }

    /// The tokens of one mode only.
    public func tokens(in mode: RunLoop.Mode) -> [String] { events.filter { $0.mode == mode }.map(\.token) }

    /// How many times `token` was recorded.
    public func count(of token: String) -> Int { events.lazy.filter { $0.token == token }.count }

    /// The recorded iterations, in the order they began (nested runs' iterations are listed separately).
    public var iterations: [Iteration] {
        var result: [Iteration] = []
        var open: [Int: (mode: RunLoop.Mode, index: Int, start: LoopInstant, events: [Event])] = [:]
        func close(depth: Int) {
            if let iteration = open.removeValue(forKey: depth), iteration.index > 0 {
                result.append(Iteration(mode: iteration.mode, depth: depth, index: iteration.index, start: iteration.start, events: iteration.events))
            }
        }
        for event in events {
            if case .activity(.beforeTimers) = event.kind { close(depth: event.depth) }
            if open[event.depth] == nil || open[event.depth]?.index != event.iteration {
                open[event.depth] = (event.mode, event.iteration, event.time, [])
            }
            open[event.depth]?.events.append(event)
            if case .activity(.exit) = event.kind { close(depth: event.depth) }
        }
        for depth in open.keys.sorted() { close(depth: depth) }
        return result.sorted { $0.start < $1.start || ($0.start == $1.start && $0.depth < $1.depth) }
    }

    // MARK: recording (loop thread)

    private func isRecorded(_ mode: RunLoop.Mode, on loop: RunLoop) -> Bool {
        guard let modes = locked({ recordedModes }) else { return true }
        return modes.contains(mode) || (modes.contains(.common) && loop.commonModes.contains(mode))
    }

    private func record(_ activity: RunLoop.Activity, on loop: RunLoop) {
        let mode = loop.currentMode ?? .default
        let now = loop.now
        locked {
            if activity == .entry { frames.append(0) }
            if activity == .beforeTimers, !frames.isEmpty { frames[frames.count - 1] += 1 }
            recorded.append(
                Event(
                    kind: .activity(activity), mode: mode, time: now, end: nil,
                    iteration: frames.last ?? 0, depth: frames.count))
            if activity == .exit, !frames.isEmpty { frames.removeLast() }
        }
    }

    private func record(_ callout: RunLoop.Callout, on loop: RunLoop) {
        guard isRecorded(callout.mode, on: loop) else { return }
        locked {
            if let end = callout.end {
                if let index = openCallouts.popLast(), index < recorded.count { recorded[index].end = end }
                return
            }
            openCallouts.append(recorded.count)
            recorded.append(
                Event(
                    kind: .callout(callout.kind, label: callout.label), mode: callout.mode, time: callout.start, end: nil,
                    iteration: frames.last ?? 0, depth: callout.depth))
        }
    }
}

extension RunLoop.CalloutKind {
    /// The letter traces write for the kind (T S P B O), and the word a timeline shows for it.
    var names: (letter: String, word: String) {
        switch self {
        case .timer: return ("T", "timer")
        case .source: return ("S", "source")
        case .port: return ("P", "I/O")
        case .block: return ("B", "block")
        case .observer: return ("O", "observer")
        }
    }
}
