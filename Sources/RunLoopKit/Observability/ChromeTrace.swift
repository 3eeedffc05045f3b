/// Recordings of several loops as one Chrome trace-event JSON document (Trace Event Format), which
/// Perfetto (ui.perfetto.dev) and chrome://tracing open: the same run a ``TimelineHTML`` page draws.
///
/// Each lane is two named threads of one process: the loop (activations as B/E spans, sleeps and
/// callouts as "X" complete events that nest, the other activities as instants) and its marks
/// (``ActivityRecorder/mark(_:detail:flow:at:)`` as instants, spans as async events) — apart, because an
/// outage span crosses the loop's sleeps and would not nest with them. A flow's arrows (a message from
/// its sender through the node) are flow events, an "s" at the departure and an "f" at the arrival
/// with one id. Markers are global instants.
/// Times are microseconds from the earliest event of any lane.
public enum ChromeTrace {
    /// - Parameters:
    ///   - title: the process name Perfetto shows.
    ///   - lanes: one recording per loop, top to bottom, named for the person reading (alice's loop).
    ///   - markers: instants of the whole run (a crash), drawn across every lane.
    ///   - hiding: callout labels left out (say, the probing of the program that records).
    public static func render(
        title: String, lanes: [(name: String, recorder: ActivityRecorder)],
        markers: [(at: LoopInstant, label: String)] = [], hiding: Set<String> = []
    ) -> String {
        let recorded = lanes.map { (name: $0.name, events: $0.recorder.events(hiding: hiding), marks: $0.recorder.marks) }
        let instants = recorded.flatMap { lane in lane.events.map(\.time) + lane.marks.map(\.time) } + markers.map(\.at)
        let clock = TraceClock(origin: instants.min() ?? LoopInstant(nanoseconds: 0))
        var lines = [#"{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":\#(jsonString(title))}}"#]
        for (index, lane) in recorded.enumerated() {
            let loopThread = 2 * index + 1
            lines.append(threadName(lane.name, thread: loopThread))
            lines.append(threadName(lane.name + " · events", thread: loopThread + 1))
            lines += clock.lines(for: lane.events, thread: loopThread)
            lines += clock.lines(for: lane.marks, thread: loopThread + 1)
        }
        lines += clock.flowLines(marks: recorded.map(\.marks)) { lane in 2 * lane + 2 }
        for marker in markers {
            lines.append(#"{"name":\#(jsonString(marker.label)),"cat":"marker","ph":"i","s":"g","pid":1,"tid":1,"ts":\#(clock.micros(marker.at))}"#)
        }
        return document(lines)
    }

    static func document(_ lines: [String]) -> String {
        "{\"traceEvents\":[\n" + lines.joined(separator: ",\n") + "\n],\"displayTimeUnit\":\"ms\"}\n"
    }

    /// A thread's name and its place (sorted as given), as "M" metadata events.
    private static func threadName(_ name: String, thread: Int) -> String {
        #"{"name":"thread_name","ph":"M","pid":1,"tid":\#(thread),"args":{"name":\#(jsonString(name))}},"#
            + #"{"name":"thread_sort_index","ph":"M","pid":1,"tid":\#(thread),"args":{"sort_index":\#(thread)}}"#
    }
}

/// Trace times: microseconds (with nanosecond decimals) from the origin.
struct TraceClock {
    let origin: LoopInstant

    func micros(_ instant: LoopInstant) -> String {
        let nanoseconds = instant.nanoseconds >= origin.nanoseconds ? instant.nanoseconds - origin.nanoseconds : 0
        return "\(nanoseconds / 1000).\(format3(nanoseconds % 1000))"
    }

    /// A recorder's events on `thread`: activations B/E, sleeps and callouts X, other activities i.
    func lines(for events: [ActivityRecorder.Event], thread: Int) -> [String] {
        var lines: [String] = []
        var sleepStarts: [Int: LoopInstant] = [:]
        var running: [String] = []  // the activations begun and not ended, innermost last
        for event in events {
            let common = #""pid":1,"tid":\#(thread),"ts":\#(micros(event.time))"#
            let args = #""args":{"mode":\#(jsonString(event.mode.rawValue)),"iteration":\#(event.iteration),"depth":\#(event.depth)}"#
            switch event.kind {
            case .activity(.entry):
                running.append(jsonString("run \(event.mode.rawValue)"))
                lines.append(#"{"name":\#(running[running.count - 1]),"cat":"activation","ph":"B",\#(common),\#(args)}"#)
            case .activity(.exit):
                // A recorder attached inside a run sees its exit and not its entry: no span to end.
                guard let name = running.popLast() else { continue }
                lines.append(#"{"name":\#(name),"cat":"activation","ph":"E",\#(common),\#(args)}"#)
            case .activity(.beforeWaiting):
                sleepStarts[event.depth] = event.time
                lines.append(instant(event, common, args))
            case .activity(.afterWaiting):
                if let start = sleepStarts.removeValue(forKey: event.depth) {
                    lines.append(
                        #"{"name":"sleep","cat":"wait","ph":"X","pid":1,"tid":\#(thread),"ts":\#(micros(start)),"dur":\#(microseconds(event.time - start)),\#(args)}"#
                    )
                }
                lines.append(instant(event, common, args))
            case .activity:
                lines.append(instant(event, common, args))
            case .callout(let kind, _):
                let duration = (event.end ?? event.time) - event.time
                lines.append(
                    #"{"name":\#(jsonString(event.token)),"cat":"\#(kind.rawValue)","ph":"X",\#(common),"dur":\#(microseconds(duration)),\#(args)}"#)
            }
        }
        // Runs still going when the recording was read end with its last event.
        if let last = events.map({ $0.end ?? $0.time }).max() {
            for name in running.reversed() {
                lines.append(#"{"name":\#(name),"cat":"activation","ph":"E","pid":1,"tid":\#(thread),"ts":\#(micros(last))}"#)
            }
        }
        return lines
    }

    /// Marks on `thread`: instants "i"; spans as async "b"/"e" pairs (id: thread and index), which a
    /// viewer stacks on tracks of their own, for spans overlap (carol offline during her link's
    /// silence). A span never ended lasts zero.
    func lines(for marks: [ActivityRecorder.Mark], thread: Int) -> [String] {
        marks.enumerated().flatMap { index, mark -> [String] in
            let args = mark.detail.map { #","args":{"detail":\#(jsonString($0))}"# } ?? ""
            let name = #""name":\#(jsonString(mark.label)),"cat":"mark","pid":1,"tid":\#(thread)"#
            guard mark.isSpan else { return [#"{\#(name),"ts":\#(micros(mark.time)),"ph":"i","s":"t"\#(args)}"#] }
            let id = #""id":"\#(thread).\#(index)""#
            return [
                #"{\#(name),"ts":\#(micros(mark.time)),"ph":"b",\#(id)\#(args)}"#,
                #"{\#(name),"ts":\#(micros(mark.end ?? mark.time)),"ph":"e",\#(id)}"#
            ]
        }
    }

    /// The arrows of the lanes' flows (``FlowArrow``) as flow events: an "s" where each leaves, an
    /// "f" where it arrives, one id per arrow, named for its hop, bound to the marks' instants.
    func flowLines(marks: [[ActivityRecorder.Mark]], thread: (Int) -> Int) -> [String] {
        FlowArrow.between(marks).enumerated().flatMap { id, arrow -> [String] in
            let departure = marks[arrow.from.lane][arrow.from.mark], arrival = marks[arrow.to.lane][arrow.to.mark]
            let common = #""name":\#(jsonString(departure.flow?.hop ?? departure.label)),"cat":"flow","id":\#(id),"bp":"e""#
            return [
                #"{\#(common),"ph":"s","pid":1,"tid":\#(thread(arrow.from.lane)),"ts":\#(micros(departure.time))}"#,
                #"{\#(common),"ph":"f","pid":1,"tid":\#(thread(arrow.to.lane)),"ts":\#(micros(arrival.time))}"#
            ]
        }
    }

    private func instant(_ event: ActivityRecorder.Event, _ common: String, _ args: String) -> String {
        #"{"name":\#(jsonString(event.token)),"cat":"activity","ph":"i","s":"t",\#(common),\#(args)}"#
    }
}

extension ActivityRecorder {
    /// The recorded events but the callouts whose label is in `hiding`: what the exports draw.
    func events(hiding: Set<String>) -> [Event] {
        guard !hiding.isEmpty else { return events }
        return events.filter { event in
            if case .callout(_, let label?) = event.kind, hiding.contains(label) { return false }
            return true
        }
    }
}

func format3(_ value: UInt64) -> String {
    value < 10 ? "00\(value)" : value < 100 ? "0\(value)" : "\(value)"
}

func microseconds(_ duration: Duration) -> String {
    let nanoseconds = max(0, duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    return "\(nanoseconds / 1000).\(format3(UInt64(nanoseconds % 1000)))"
}
