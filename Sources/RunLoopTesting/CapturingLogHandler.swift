public import Logging

/// A swift-log handler that keeps every record (level, message, metadata) for a test to check, from
/// any thread: `Logger(label: "test") { _ in handler }`, then read ``records``. Copies share the
/// records, as a logger copies its handler.
public struct CapturingLogHandler: LogHandler {
    /// One log call.
    public struct Record: Sendable {
        public let level: Logger.Level
        public let message: String
        public let metadata: [String: String]
    }

    /// Everything logged through this handler (or a copy of it), in order.
    public let records = LockedBox<[Record]>([])
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace

    public init() {}

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let flattened = (event.metadata ?? [:]).mapValues { "\($0)" }
        records.update { $0.append(Record(level: event.level, message: "\(event.message)", metadata: flattened)) }
    }
}
