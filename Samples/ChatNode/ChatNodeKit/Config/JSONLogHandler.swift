public import Logging

#if canImport(Glibc)
// The clock's `timespec` is in the public API: a test stamps lines with a time of its own.
public import Glibc
#endif

/// A swift-log handler that writes each record as one JSON object on one line — `time` (UTC,
/// RFC 3339 with milliseconds), `level`, `label`, `message`, and `metadata` when there is any —
/// for log collectors (`chat-node serve --log-format json`). Each line leaves in one `write`, so
/// lines from several threads never interleave. Any thread.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let output: @Sendable (String) -> Void
    private let clock: @Sendable () -> timespec

    /// A handler writing to standard error.
    public init(label: String) {
        self.init(label: label, clock: Self.realTime) { line in
            line.utf8CString.withUnsafeBufferPointer { _ = write(STDERR_FILENO, $0.baseAddress, $0.count - 1) }
        }
    }

    /// A handler handing each line (with its newline) to `output`, stamped by `clock` (tests).
    public init(label: String, clock: @escaping @Sendable () -> timespec, output: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.clock = clock
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let given = event.metadata { merged.merge(given) { _, new in new } }
        var line = "{\"time\":\(quotedString(Self.timestamp(clock()))),\"level\":\(quotedString(event.level.rawValue))"
        line += ",\"label\":\(quotedString(label)),\"message\":\(quotedString(event.message.description))"
        if !merged.isEmpty { line += ",\"metadata\":\(Self.json(.dictionary(merged)))" }
        output(line + "}\n")
    }

    private static func json(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): return quotedString(text)
        case .stringConvertible(let convertible): return quotedString(convertible.description)
        case .array(let values): return "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let members):
            // Sorted keys: the same record is the same line, which tests and diffs rely on.
            return "{" + members.sorted { $0.key < $1.key }.map { "\(quotedString($0.key)):\(json($0.value))" }.joined(separator: ",") + "}"
        }
    }

    /// `2026-11-26T06:01:02.123Z`.
    static func timestamp(_ time: timespec) -> String {
        var seconds = time.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let date = "\(digits(Int(parts.tm_year) + 1900, 4))-\(digits(Int(parts.tm_mon) + 1, 2))-\(digits(Int(parts.tm_mday), 2))"
        let clock = "\(digits(Int(parts.tm_hour), 2)):\(digits(Int(parts.tm_min), 2)):\(digits(Int(parts.tm_sec), 2))"
        return "\(date)T\(clock).\(digits(Int(time.tv_nsec) / 1_000_000, 3))Z"
    }

    private static let realTime: @Sendable () -> timespec = {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now
    }
}
