/// Renders recordings of several loops as one self-contained HTML page a person reads without the
/// source: a lane per loop with its sleeps (and what woke each), its callouts as nested slices with
/// durations, its marks as labelled instants and spans, and a summary (wake-ups per second, busy %,
/// longest callout); markers across all lanes; arrows between lanes for the marks' flows (a message
/// from its sender through the node to its recipients), whose path a click highlights and lists hop by
/// hop; zoom and pan from the whole run down to microseconds,
/// hovers with times and durations, a details panel on click. Nothing is loaded from outside.
///
/// Times are the loops' own clocks, which must be the same clock (the system's monotonic one) for
/// the lanes to line up. Every callout is in the page (the browser merges what shares a pixel), so
/// the file grows with the recording: minutes, not hours.
///
/// Any thread.
public enum TimelineHTML {
    /// - Parameters:
    ///   - lanes: one recording per loop, top to bottom, named for the person reading (alice's loop).
    ///   - markers: instants to mark with a labelled line across every lane.
    ///   - hiding: callout labels left out (say, the probing of the program that records).
    public static func render(
        title: String, lanes: [(name: String, recorder: ActivityRecorder)],
        markers: [(at: LoopInstant, label: String)] = [], hiding: Set<String> = []
    ) -> String {
        let drawn = lanes.map { TimelineLane(name: $0.name, events: $0.recorder.events(hiding: hiding), marks: $0.recorder.marks) }
        let starts = drawn.flatMap { lane in lane.sleeps.map(\.start) + lane.callouts.map(\.start) + lane.marks.map(\.time) }
        let ends = drawn.flatMap { lane in lane.sleeps.map(\.end) + lane.callouts.map(\.end) + lane.marks.map { $0.end ?? $0.time } }
        guard let origin = (starts + markers.map(\.at)).min(), let last = (ends + markers.map(\.at)).max() else {
            return TimelinePage.html(title: title, data: nil)
        }
        let clock = TraceClock(origin: origin)
        let arrows = FlowArrow.between(drawn.map(\.marks)).map { arrow in
            "[\(arrow.from.lane),\(arrow.from.mark),\(arrow.to.lane),\(arrow.to.mark)]"
        }
        let data = """
            {"title":\(jsonString(title)),"end":\(clock.micros(last)),\
            "markers":[\(markers.map { "[\(clock.micros($0.at)),\(jsonString($0.label))]" }.joined(separator: ","))],
            "arrows":[\(arrows.joined(separator: ","))],
            "lanes":[\(drawn.map { json($0, clock) }.joined(separator: ",\n"))]}
            """
        return TimelinePage.html(title: title, data: data)
    }

    private static func json(_ lane: TimelineLane, _ clock: TraceClock) -> String {
        func optional(_ text: String?) -> String { text.map(jsonString) ?? "null" }
        let summary = lane.summary
        let longest = summary.longest.map { "[\(jsonString($0.name)),\(microseconds($0.duration))]" } ?? "null"
        let sleeps = lane.sleeps.map { "[\(clock.micros($0.start)),\(clock.micros($0.end)),\(optional($0.wokenBy))]" }
        let callouts = lane.callouts.map {
            "[\(clock.micros($0.start)),\(clock.micros($0.end)),\"\($0.kind.names.letter)\",\(jsonString($0.name)),\($0.level)]"
        }
        let marks = lane.marks.map { mark in
            "[\(clock.micros(mark.time)),\(mark.isSpan ? clock.micros(mark.end ?? mark.time) : "null"),\(jsonString(mark.label)),"
                + "\(optional(mark.detail)),\(optional(mark.flow?.path))]"
        }
        return """
            {"name":\(jsonString(lane.name)),"summary":{"wakeUps":\(summary.wakeUps),\
            "wakeUpsPerSecond":\(rounded(summary.wakeUpsPerSecond)),"busyPercent":\(rounded(summary.busyFraction * 100)),\
            "recorded":\(microseconds(summary.recorded)),"longest":\(longest)},
            "sleeps":[\(sleeps.joined(separator: ","))],
            "callouts":[\(callouts.joined(separator: ","))],
            "marks":[\(marks.joined(separator: ","))]}
            """
    }

    private static func rounded(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let hundredths = (value * 100).rounded()
        return "\(Int(hundredths) / 100).\(String(format2(abs(Int(hundredths)) % 100)))"
    }

    private static func format2(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
