import CoreMetrics
public import Logging
public import Prometheus
public import RunLoopKit

/// The chat node's metrics backend: a Prometheus registry that the node's server and loop report
/// to through swift-metrics, and that `GET /metrics` renders in Prometheus's text format.
///
/// The libraries know only swift-metrics; the node picks this backend. `chat-node serve` also makes
/// it the process's `MetricsSystem` factory; a node in a test keeps its own registry, so two nodes in
/// one process count apart.
///
/// Sendable: the registry locks internally; ``text`` may be called from any thread.
public struct NodeMetrics: Sendable {
    /// Where every metric of the node is kept.
    public let registry: PrometheusCollectorRegistry
    /// What the node hands its ``IMServer`` and its loop's ``RunLoopStallDetector``.
    public let factory: PrometheusMetricsFactory

    /// A fresh registry, empty.
    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.nameAndLabelSanitizer = { name, labels in (Self.prometheusNames[name] ?? name, labels) }
        // A loop iteration or a SQLite commit takes microseconds: the default buckets start at 5 ms.
        for name in ["runloop_busy_seconds", "runloop_callout_seconds", "im_store_call_duration_seconds"] {
            factory.durationHistogramBuckets[name] = Self.shortDurationBuckets
        }
        self.factory = factory
    }

    /// Makes this the process's swift-metrics backend, for whatever else reports through
    /// `MetricsSystem.factory`. Once per process (swift-metrics traps on a second call).
    public func bootstrapProcess() {
        MetricsSystem.bootstrap(factory)
    }

    /// Every metric, in Prometheus's text exposition format.
    public var text: [UInt8] { registry.emitToBuffer() }

    /// Watches `loop` for stalls (iterations busy past `threshold`, logged as warnings) and records
    /// its iterations' busy time here. Call on any thread; keep the detector while the loop runs.
    public func watchStalls(
        of loop: RunLoop, threshold: Duration = .milliseconds(100), logger: Logger = Logger(label: "chat-node.stall")
    ) -> RunLoopStallDetector {
        let detector = RunLoopStallDetector(threshold: threshold, logger: logger, metricsFactory: factory)
        detector.attach(to: loop)
        return detector
    }

    /// RunLoopKit's dotted labels as Prometheus names, with their unit or `_total` suffix.
    static let prometheusNames = [
        "runloop.iterations": "runloop_iterations_total",
        "runloop.stalls": "runloop_stalls_total",
        "runloop.busy": "runloop_busy_seconds",
        "runloop.asleep": "runloop_asleep_seconds",
        "runloop.callout": "runloop_callout_seconds"
    ]

    static let shortDurationBuckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .seconds(1), .seconds(5)
    ]
}
