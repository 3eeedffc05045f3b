public import Logging
import Synchronization

/// The level every log handler of a node filters with, changed at once for all of them: by a
/// reload (SIGHUP), whose new `log-level` reaches loggers made long before. Any thread.
public final class LiveLogLevel: Sendable {
    private let current: Mutex<Logger.Level>

    public init(_ level: Logger.Level) {
        current = Mutex(level)
    }

    public var level: Logger.Level {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}

/// A handler that filters with a ``LiveLogLevel`` (unless a logger sets a level of its own) and
/// writes through `Inner`, which never filters.
public struct LiveLevelLogHandler<Inner: LogHandler>: LogHandler {
    private var inner: Inner
    private let live: LiveLogLevel
    /// A level one logger set for itself, as swift-log lets any logger do.
    private var ownLevel: Logger.Level?

    public init(_ inner: Inner, level: LiveLogLevel) {
        self.inner = inner
        self.inner.logLevel = .trace
        live = level
    }

    public var logLevel: Logger.Level {
        get { ownLevel ?? live.level }
        set { ownLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        inner.log(event: event)
    }
}

/// The process's logging as `serve` sets it up: the format once, the level live.
public enum NodeLogging {
    /// Every logger made from now on writes to standard error in `format`, at `level`'s level.
    /// Once per process (swift-log's rule), before the first logger is made.
    public static func bootstrap(format: NodeSettings.LogFormat, level: LiveLogLevel) {
        LoggingSystem.bootstrap { label in
            switch format {
            case .text: return LiveLevelLogHandler(StreamLogHandler.standardError(label: label), level: level)
            case .json: return LiveLevelLogHandler(JSONLogHandler(label: label), level: level)
            }
        }
    }
}
