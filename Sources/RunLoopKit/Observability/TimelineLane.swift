/// One loop's recording as a timeline draws it: sleeps with what woke each, callouts stacked by
/// nesting, the marks, and a summary a person compares lanes by. A pure function of the recording.
///
/// Any thread; a value.
public struct TimelineLane: Sendable {
    /// A stretch asleep in the loop's wait, and the first thing it ran on waking.
    public struct Sleep: Sendable, Hashable {
        public let start: LoopInstant
        public let end: LoopInstant
        /// What woke the loop, as the first callout of the iteration that followed says it ("timer
        /// im.client"); nil when nothing ran (a timeout of the run, a spurious wake-up).
        public let wokenBy: String?
    }

    /// A callout that did work, with how many callouts it ran inside (0 for one straight from the loop).
    public struct Callout: Sendable, Hashable {
        public let start: LoopInstant
        public let end: LoopInstant
        public let kind: RunLoop.CalloutKind
        /// What a person reads for it: its kind in words and its label ("timer im.client").
        public let name: String
        public let level: Int
        public var duration: Duration { end - start }
    }

    /// What a lane did over its recording.
    public struct Summary: Sendable, Hashable {
        /// From the first recorded event to the last.
        public let recorded: Duration
        public let wakeUps: Int
        /// Time spent in callouts straight from the loop (nested ones counted once), over ``recorded``.
        public let busyFraction: Double
        /// The longest callout, if any ran.
        public let longest: Callout?

        public var wakeUpsPerSecond: Double {
            let seconds = Double(recorded.components.seconds) + Double(recorded.components.attoseconds) / 1e18
            return seconds > 0 ? Double(wakeUps) / seconds : 0
        }
    }

    public let name: String
    public let sleeps: [Sleep]
    public let callouts: [Callout]
    public let marks: [ActivityRecorder.Mark]
    public let summary: Summary

    /// The lane of `events` (observers' callouts are left out) and `marks`, named `name`.
    public init(name: String, events: [ActivityRecorder.Event], marks: [ActivityRecorder.Mark]) {
        self.name = name
        self.marks = marks
        var sleeps: [Sleep] = []
        var callouts: [Callout] = []
        var asleepSince: [Int: LoopInstant] = [:]  // by run depth
        var waking: [Int: (start: LoopInstant, end: LoopInstant)] = [:]  // a wake-up whose cause is not yet seen
        var openEnds: [LoopInstant] = []  // ends of the callouts the next one may sit inside
        var wakeUps = 0
        func settle(_ depth: Int, wokenBy: String?) {
            if let wake = waking.removeValue(forKey: depth) { sleeps.append(Sleep(start: wake.start, end: wake.end, wokenBy: wokenBy)) }
        }
        for event in events {
            switch event.kind {
            case .activity(.beforeWaiting):
                settle(event.depth, wokenBy: nil)
                asleepSince[event.depth] = event.time
            case .activity(.afterWaiting):
                wakeUps += 1
                if let start = asleepSince.removeValue(forKey: event.depth) { waking[event.depth] = (start, event.time) }
            case .activity(.exit):
                settle(event.depth, wokenBy: nil)
            case .activity:
                break
            case .callout(let kind, let label):
                guard kind != .observer else { continue }
                let end = max(event.end ?? event.time, event.time)
                while let last = openEnds.last, last <= event.time { openEnds.removeLast() }
                let callout = Callout(start: event.time, end: end, kind: kind, name: Self.name(kind, label), level: openEnds.count)
                openEnds.append(end)
                callouts.append(callout)
                settle(event.depth, wokenBy: callout.name)
            }
        }
        for depth in waking.keys.sorted() { settle(depth, wokenBy: nil) }
        self.sleeps = sleeps.sorted { $0.start < $1.start }
        self.callouts = callouts
        let first = (events.map(\.time) + marks.map(\.time)).min()
        let last = (events.map { $0.end ?? $0.time } + marks.map { $0.end ?? $0.time }).max()
        let recorded = first.flatMap { first in last.map { $0 - first } } ?? .zero
        let busy = callouts.filter { $0.level == 0 }.reduce(Duration.zero) { $0 + $1.duration }
        summary = Summary(
            recorded: recorded, wakeUps: wakeUps, busyFraction: recorded > .zero ? busy / recorded : 0,
            longest: callouts.max { $0.duration < $1.duration })
    }

    /// A callout's kind in words, then its label: "timer im.client alice", "I/O alice ↔ node".
    static func name(_ kind: RunLoop.CalloutKind, _ label: String?) -> String {
        label.map { "\(kind.names.word) \($0)" } ?? kind.names.word
    }
}
