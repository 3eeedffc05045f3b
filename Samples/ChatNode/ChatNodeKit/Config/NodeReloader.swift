import Logging
public import RunLoopKit

#if canImport(Glibc)
import Glibc
#endif

/// What SIGHUP does to a running node, the one reload path for every setting: read the settings
/// again (`load`), let ``ConfigReload`` decide, then take the limits, the log level and the
/// certificate files (loaded again even when their names did not change, so a certificate renewed
/// in place is served), log each change and each change that waits for a restart. Settings that
/// cannot be read change nothing; the node goes on, and says why.
///
/// Loop thread: made, installed and run on the node's loop.
public final class NodeReloader {
    private let node: ChatNode
    private let logLevel: LiveLogLevel
    private let load: () -> Result<NodeSettings, ConfigErrors>
    /// Runs as a reload begins and once it is over (applied or refused): where `serve` tells systemd
    /// (`RELOADING=1`, then `READY=1`).
    public var willReload: (() -> Void)?
    public var didReload: (() -> Void)?
    /// The settings in force.
    public private(set) var running: NodeSettings

    /// A reloader of `node`, which runs with `running` and logs at `logLevel`.
    public init(node: ChatNode, running: NodeSettings, logLevel: LiveLogLevel, load: @escaping () -> Result<NodeSettings, ConfigErrors>) {
        self.node = node
        self.running = running
        self.logLevel = logLevel
        self.load = load
    }

    /// Reloads now: what SIGHUP runs.
    public func reload() {
        willReload?()
        defer { didReload?() }
        let decision = ConfigReload.decide(running: running, loaded: load())
        guard decision.errors.isEmpty else {
            decision.report.forEach { node.logger.error("\($0)") }
            return
        }
        // Told before a new level applies, which could hide it.
        decision.report.forEach { node.logger.notice("\($0)") }
        running = decision.settings
        logLevel.level = running.logLevel
        node.applyLimits(of: running)
        guard node.isTLS else { return }
        do {
            if let context = try running.tlsContext() { node.reloadTLS(context) }
        } catch {
            node.logger.error("TLS reload refused, keeping the certificate in use: \(error)")
        }
    }

    /// Reloads on every SIGHUP from now on, on `loop`; the source stops it when invalidated.
    public func reloadOnHangup(loop: RunLoop) throws -> RunLoopSignalSource {
        let source = try RunLoopSignalSource(signal: SIGHUP) { [weak self] _, _ in self?.reload() }
        try loop.add(source, forMode: .common)
        // A parent may have started the node with every signal blocked (as Swift's threads do).
        var hangup = sigset_t()
        sigemptyset(&hangup)
        sigaddset(&hangup, SIGHUP)
        pthread_sigmask(SIG_UNBLOCK, &hangup, nil)
        return source
    }
}
