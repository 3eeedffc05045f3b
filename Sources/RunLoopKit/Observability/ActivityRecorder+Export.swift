extension ActivityRecorder {
    /// The recording as Chrome trace-event JSON, for Perfetto (ui.perfetto.dev) or chrome://tracing.
    ///
    /// Activations (entry to exit) and sleeps (beforeWaiting to afterWaiting) are spans, callouts are
    /// spans inside them — a nested run shows inside the callout that started it — and the other
    /// activities are instant events, all on thread 1; marks (``mark(_:detail:flow:at:)``, spans) are on
    /// thread 2, their flows' arrows flow events there too. Times are microseconds from the first event. ``ChromeTrace`` writes several loops.
    public func chromeTraceJSON() -> String {
        let events = self.events, marks = self.marks
        guard let origin = (events.map(\.time) + marks.map(\.time)).min() else { return #"{"traceEvents":[],"displayTimeUnit":"ms"}"# }
        let clock = TraceClock(origin: origin)
        return ChromeTrace.document(
            clock.lines(for: events, thread: 1) + clock.lines(for: marks, thread: 2) + clock.flowLines(marks: [marks]) { _ in 2 })
    }

    /// What the tokens of a trace mean, as the `#` lines that head a ``timeline()``.
    public static let tokenLegend = """
        # Each line: +seconds since the first event, [mode], #iteration of its run, the event.
        # Activities: E entry (a run starts), BT before timers, BS before sources, BW before waiting
        #   (about to sleep), AW after waiting (woke up), X exit (the run ends).
        # Callouts: T:timer  S:custom source  P:port source  B:block  O:observer — then the item's label
        #   (just the letter when it has none), and how long the callout took.
        # Indentation: one step per nested run.

        """

    /// The recording as a plain-text timeline: a legend of the tokens (``tokenLegend``, lines starting
    /// with `#`), then one line per event with its time from the first event, mode, iteration and
    /// token, indented by nesting depth; callouts show their duration.
    public func timeline() -> String {
        let events = self.events
        guard let origin = events.first?.time else { return "" }
        return Self.tokenLegend
            + events.map { event in
                let offset = event.time - origin
                let indent = String(repeating: "  ", count: max(0, event.depth - 1))
                var line = "+\(seconds(offset))s  \(indent)[\(event.mode.rawValue)] #\(event.iteration)  \(event.token)"
                if case .callout = event.kind, let end = event.end {
                    line += "  (\(seconds(end - event.time))s)"
                }
                return line
            }.joined(separator: "\n") + "\n"
    }
}

private func seconds(_ duration: Duration) -> String {
    let nanoseconds = max(0, duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    let fraction = String(nanoseconds % 1_000_000_000)
    return "\(nanoseconds / 1_000_000_000)." + String(repeating: "0", count: 9 - fraction.count) + fraction
}

/// The recorder's exports quote through the one public rule (``JSONText``).
func jsonString(_ text: String) -> String { JSONText.quoted(text) }
