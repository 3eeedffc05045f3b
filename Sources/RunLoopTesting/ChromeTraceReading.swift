import Foundation

/// A Chrome trace-event JSON document (``RunLoopKit/ChromeTrace``, ``RunLoopKit/ActivityRecorder/chromeTraceJSON()``)
/// read back the way a viewer reads it — named threads, slices, instants — for tests to check what
/// Perfetto would show.
///
/// Any thread; a value.
public struct ChromeTraceReading: Sendable {
    /// A span on one thread: a "B"/"E" pair, an "X" complete event or an async "b"/"e" pair. Times in
    /// microseconds.
    public struct Slice: Sendable, CustomStringConvertible {
        public let thread: Int
        public let name: String
        public let start: Double
        public let end: Double
        public var description: String { "\(name) [\(start), \(end)] on thread \(thread)" }
    }

    /// An "i" instant event.
    public struct Instant: Sendable {
        public let thread: Int
        public let name: String
        public let time: Double
        /// `args.detail`, when it has one.
        public let detail: String?
    }

    /// A flow event pair: an arrow from an "s" to the "f" of the same `id`.
    public struct Flow: Sendable, CustomStringConvertible {
        public let id: String
        public let name: String
        public let fromThread: Int
        public let fromTime: Double
        public let toThread: Int
        public let toTime: Double
        public var description: String { "\(name) #\(id): thread \(fromThread) at \(fromTime) → thread \(toThread) at \(toTime)" }
    }

    /// Thread id → its "thread_name" metadata.
    public private(set) var threadNames: [Int: String] = [:]
    public private(set) var slices: [Slice] = []
    /// Async spans ("b"/"e" pairs by `id`), on the thread of their "b": they may overlap.
    public private(set) var asyncSlices: [Slice] = []
    public private(set) var instants: [Instant] = []
    /// Flow arrows ("s"/"f" pairs by `id`).
    public private(set) var flows: [Flow] = []
    /// What does not read as a trace: events without a numeric `ts`, an "E" with no "B", a "B" never
    /// ended (async ones too), a negative duration, a flow's "s" with no "f" or the reverse, or twice. Empty for a well-formed trace.
    public private(set) var problems: [String] = []

    /// Parses `json`; throws when it is not JSON or has no `traceEvents` array.
    public init(json: String) throws {
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        guard let events = object?["traceEvents"] as? [[String: Any]] else {
            throw CocoaError(.propertyListReadCorrupt, userInfo: [NSDebugDescriptionErrorKey: "no traceEvents array"])
        }
        var open: [Int: [(name: String, start: Double)]] = [:]
        var openAsync: [String: (thread: Int, name: String, start: Double)] = [:]
        var flowStarts: [String: (thread: Int, name: String, time: Double)] = [:]
        var flowIDs: Set<String> = []
        for event in events {
            let phase = event["ph"] as? String ?? ""
            let name = event["name"] as? String ?? ""
            let thread = event["tid"] as? Int ?? 0
            let args = event["args"] as? [String: Any]
            if phase == "M" {
                if name == "thread_name", let threadName = args?["name"] as? String { threadNames[thread] = threadName }
                continue
            }
            guard let time = event["ts"] as? Double else {
                problems.append("no numeric ts: \(event)")
                continue
            }
            switch phase {
            case "B": open[thread, default: []].append((name, time))
            case "E":
                guard let begun = open[thread]?.popLast() else {
                    problems.append("E without B: \(name) on thread \(thread)")
                    continue
                }
                if begun.name != name { problems.append("E \(name) closes B \(begun.name) on thread \(thread)") }
                slices.append(Slice(thread: thread, name: name, start: begun.start, end: time))
            case "X":
                let duration = event["dur"] as? Double ?? -1
                if duration < 0 { problems.append("X \(name) without a non-negative dur") }
                slices.append(Slice(thread: thread, name: name, start: time, end: time + max(0, duration)))
            case "b": openAsync[event["id"] as? String ?? ""] = (thread, name, time)
            case "e":
                guard let begun = openAsync.removeValue(forKey: event["id"] as? String ?? "") else {
                    problems.append("e without b: \(name)")
                    continue
                }
                if time < begun.start { problems.append("e before its b: \(name)") }
                asyncSlices.append(Slice(thread: begun.thread, name: begun.name, start: begun.start, end: time))
            case "s":
                let id = event["id"].map { "\($0)" } ?? ""
                if flowStarts[id] != nil || flowIDs.contains(id) { problems.append("flow \(id) starts twice") }
                flowStarts[id] = (thread, name, time)
            case "f":
                let id = event["id"].map { "\($0)" } ?? ""
                guard let start = flowStarts.removeValue(forKey: id) else {
                    problems.append("f without s: flow \(id)")
                    continue
                }
                flowIDs.insert(id)
                flows.append(Flow(id: id, name: start.name, fromThread: start.thread, fromTime: start.time, toThread: thread, toTime: time))
            case "i", "I":
                instants.append(Instant(thread: thread, name: name, time: time, detail: args?["detail"] as? String))
            default: break
            }
        }
        if !flowStarts.isEmpty { problems.append("flows never finished: \(flowStarts.keys.sorted())") }
        if !openAsync.isEmpty { problems.append("b never ended: \(openAsync.values.map(\.name))") }
        for (thread, begun) in open where !begun.isEmpty {
            problems.append("B never ended on thread \(thread): \(begun.map(\.name))")
        }
    }

    /// Pairs of slices on one thread that overlap without one holding the other: a viewer cannot
    /// stack them. Empty when every thread's slices nest.
    public var crossingSlices: [(Slice, Slice)] {
        var crossings: [(Slice, Slice)] = []
        for onThread in Dictionary(grouping: slices, by: \.thread).values {
            let sorted = onThread.sorted { $0.start < $1.start || ($0.start == $1.start && $0.end > $1.end) }
            var enclosing: [Slice] = []
            for slice in sorted {
                while let last = enclosing.last, last.end <= slice.start { enclosing.removeLast() }
                if let last = enclosing.last, slice.end > last.end { crossings.append((last, slice)) }
                enclosing.append(slice)
            }
        }
        return crossings
    }

    /// The thread named `name`, if one is.
    public func thread(named name: String) -> Int? {
        threadNames.first { $0.value == name }?.key
    }
}
