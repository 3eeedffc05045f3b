/// The arrows between lanes that marks' flows (``ActivityRecorder/Flow``) make: each arrival joined
/// to its hop's departure. The one pairing rule both exports (``TimelineHTML``, ``ChromeTrace``) draw.
///
/// A pure function of the marks; any thread.
struct FlowArrow: Hashable {
    /// A mark by its lane's place and its own place in that lane's marks.
    struct End: Hashable {
        let lane: Int
        let mark: Int
    }

    let from: End
    let to: End

    /// The arrows of `lanes` (each lane's marks, in the order they were made), in arrival order.
    ///
    /// An arrival takes the latest departure of its path and hop made at or before it, not taken
    /// already (a frame lost and sent again arrives as the resend); failing that the earliest one
    /// after it, for the two ends are stamped on different threads and a reader can win the race
    /// with the writer's mark. An arrival with no departure, and a departure never answered (a frame
    /// lost in a crash), draw no arrow.
    static func between(_ lanes: [[ActivityRecorder.Mark]]) -> [FlowArrow] {
        struct Step {
            let end: End
            let time: LoopInstant
        }
        var departures: [String: [Step]] = [:]  // by path and hop, in time order
        var arrivals: [(key: String, step: Step)] = []
        for (lane, marks) in lanes.enumerated() {
            for (index, mark) in marks.enumerated() {
                guard let flow = mark.flow else { continue }
                let step = Step(end: End(lane: lane, mark: index), time: mark.time)
                let key = flow.path + "\u{0}" + flow.hop
                if flow.isArrival { arrivals.append((key, step)) } else { departures[key, default: []].append(step) }
            }
        }
        for key in departures.keys { departures[key]?.sort { $0.time < $1.time } }
        arrivals.sort { $0.step.time < $1.step.time }
        var arrows: [FlowArrow] = []
        for (key, arrival) in arrivals {
            guard let waiting = departures[key], !waiting.isEmpty else { continue }
            let index = waiting.lastIndex { $0.time <= arrival.time } ?? 0
            arrows.append(FlowArrow(from: waiting[index].end, to: arrival.end))
            departures[key]?.remove(at: index)
        }
        return arrows
    }
}
