/// Renders recordings of several loops as one self-contained HTML page with an SVG timeline: a lane
/// per loop, its sleeps as pale bars, its callouts as coloured ticks (timers, sources, ports, blocks),
/// and labelled marks for what happened when. Open it in any browser; nothing is loaded from outside.
///
/// Times are the loops' own clocks, which must be the same clock (the system's monotonic one) for
/// the lanes to line up. Callouts that fall in the same pixel column are drawn once, with a count in
/// their tooltip, so an hour of recording stays a small file.
public enum TimelineHTML {
    /// - Parameters:
    ///   - lanes: one recording per loop, top to bottom.
    ///   - markers: instants to mark with a labelled line across every lane.
    ///   - hiding: callout labels left out (say, the probing of the program that records).
    public static func render(
        title: String, lanes: [(name: String, recorder: ActivityRecorder)],
        markers: [(at: LoopInstant, label: String)] = [], hiding: Set<String> = []
    ) -> String {
        let recorded = lanes.map { lane in
            (
                lane.name,
                lane.recorder.events.filter { event in
                    if case .callout(_, let label?) = event.kind, hiding.contains(label) { return false }
                    return true
                }
            )
        }
        let instants = recorded.flatMap { $0.1.map(\.time) } + markers.map(\.at)
        guard let origin = instants.min(), let last = instants.max() else {
            return page(title: title, body: "<p>Nothing was recorded.</p>")
        }
        let span = max(1, Double(last.nanoseconds - origin.nanoseconds))
        let width = 1200.0, left = 140.0, laneHeight = 44.0, top = 70.0
        func x(_ instant: LoopInstant) -> Double {
            left + Double(instant.nanoseconds >= origin.nanoseconds ? instant.nanoseconds - origin.nanoseconds : 0) / span * width
        }
        var svg: [String] = []
        let height = top + Double(lanes.count) * laneHeight + 40
        svg.append(
            ##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(Int(left + width + 20))" height="\##(Int(height))" font-family="sans-serif" font-size="12">"##
        )
        // Seconds axis.
        let seconds = Int(span / 1e9)
        let step = max(1, seconds / 20)
        for second in stride(from: 0, through: seconds, by: step) {
            let position = left + Double(second) * 1e9 / span * width
            svg.append(##"<line x1="\##(f(position))" y1="\##(f(top - 8))" x2="\##(f(position))" y2="\##(f(height - 24))" stroke="#eee"/>"##)
            svg.append(##"<text x="\##(f(position))" y="\##(f(height - 10))" text-anchor="middle" fill="#666">\##(second) s</text>"##)
        }
        for (index, (name, events)) in recorded.enumerated() {
            let y = top + Double(index) * laneHeight
            svg.append(##"<text x="\##(f(left - 10))" y="\##(f(y + 24))" text-anchor="end" font-weight="bold">\##(escape(name))</text>"##)
            svg.append(
                ##"<rect x="\##(f(left))" y="\##(f(y + 6))" width="\##(f(width))" height="\##(f(laneHeight - 12))" fill="#fafafa" stroke="#ddd"/>"##)
            svg.append(contentsOf: sleeps(events, y: y, laneHeight: laneHeight, x: x))
            svg.append(contentsOf: callouts(events, y: y, laneHeight: laneHeight, x: x))
        }
        for (index, marker) in markers.enumerated() {
            let position = x(marker.at)
            let labelY = 14 + Double(index % 3) * 16
            svg.append(
                ##"<line x1="\##(f(position))" y1="\##(f(labelY + 4))" x2="\##(f(position))" y2="\##(f(height - 24))" stroke="#c00" stroke-dasharray="4 3"/>"##
            )
            svg.append(##"<text x="\##(f(position + 4))" y="\##(f(labelY))" fill="#c00">\##(escape(marker.label))</text>"##)
        }
        svg.append("</svg>")
        let legend = """
            <p class="legend"><span style="background:#e8e8e8">sleeping in epoll</span>
            <span style="background:\(color(.timer))">timer</span> <span style="background:\(color(.port))">port (socket)</span>
            <span style="background:\(color(.source))">source</span> <span style="background:\(color(.block))">block</span>
            — hover a tick for what ran and how often in that instant.</p>
            """
        return page(title: title, body: legend + svg.joined(separator: "\n"))
    }

    private static func sleeps(_ events: [ActivityRecorder.Event], y: Double, laneHeight: Double, x: (LoopInstant) -> Double) -> [String] {
        var shapes: [String] = []
        var start: LoopInstant?
        for event in events {
            if event.kind == .activity(.beforeWaiting) { start = event.time }
            if event.kind == .activity(.afterWaiting), let begun = start {
                let from = x(begun), to = x(event.time)
                if to - from >= 0.5 {
                    shapes.append(
                        ##"<rect x="\##(f(from))" y="\##(f(y + 14))" width="\##(f(to - from))" height="\##(f(laneHeight - 28))" fill="#e8e8e8"/>"##)
                }
                start = nil
            }
        }
        return shapes
    }

    private static func callouts(_ events: [ActivityRecorder.Event], y: Double, laneHeight: Double, x: (LoopInstant) -> Double) -> [String] {
        struct Column { var count = 0; var labels: [String: Int] = [:]; var width = 1.0 }
        var columns: [String: [Int: Column]] = [:]
        for event in events where event.isWork {
            guard case .callout(let kind, _) = event.kind else { continue }
            let column = Int(x(event.time).rounded(.down))
            let duration = event.end.map { x($0) - x(event.time) } ?? 0
            var entry = columns[kind.rawValue, default: [:]][column] ?? Column()
            entry.count += 1
            entry.labels[event.token, default: 0] += 1
            entry.width = max(entry.width, duration)
            columns[kind.rawValue, default: [:]][column] = entry
        }
        var shapes: [String] = []
        let kinds: [RunLoop.CalloutKind] = [.timer, .port, .source, .block]
        for (row, kind) in kinds.enumerated() {
            for (column, entry) in (columns[kind.rawValue] ?? [:]).sorted(by: { $0.key < $1.key }) {
                let tip = entry.labels.sorted { $0.value > $1.value }.prefix(4).map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
                let rowY = y + 8 + Double(row) * (laneHeight - 16) / 4
                shapes.append(
                    ##"<rect x="\##(column)" y="\##(f(rowY))" width="\##(f(entry.width))" height="\##(f((laneHeight - 16) / 4))" fill="\##(color(kind))"><title>\##(escape(tip))</title></rect>"##
                )
            }
        }
        return shapes
    }

    private static func color(_ kind: RunLoop.CalloutKind) -> String {
        switch kind {
        case .timer: return "#f39c12"
        case .port: return "#2e86de"
        case .source: return "#27ae60"
        case .block: return "#8e44ad"
        case .observer: return "#999"
        }
    }

    private static func page(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
        <style>body{font-family:sans-serif;margin:24px;color:#222} .legend span{padding:2px 8px;margin-right:6px;border-radius:3px;color:#111}</style>
        </head><body><h1>\(escape(title))</h1>
        \(body)
        </body></html>

        """
    }

    private static func escape(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
    }

    private static func f(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? "\(Int(rounded))" : "\(rounded)"
    }
}
