public import CoreMetrics
public import RunLoopIM
public import RunLoopIMCore
public import RunLoopKit
import RunLoopTesting

/// A whole IM setup in memory on a ``ManualClock``: an ``IMServer`` with an in-memory store and
/// clients connected to it through ``MemoryLinkConnector`` links — protocol tests with no socket,
/// no port and no real time.
///
/// ```swift
/// try await onManualClockLoop { loop, clock in
///     let bench = MemoryIMBench(loop: loop, clock: clock)
///     let alice = bench.client(IMClientConfiguration(user: "alice", password: "pw"))
///     try #require(bench.runUntil { alice.state == .online })
///     bench.links.lastPair?.apply(.drop)
///     try bench.advance(by: .seconds(60))
/// }
/// ```
///
/// Create and use it on the loop's thread.
public final class MemoryIMBench {
    public let loop: RunLoop
    public let clock: ManualClock
    public let server: IMServer
    /// Makes every client's links; its pairs carry the fault script.
    public let links: MemoryLinkConnector
    /// The clients made by ``client(_:start:)``, in order.
    public private(set) var clients: [IMClient] = []

    /// - Parameters:
    ///   - store: the server's store (default: an ``InMemoryIMStore`` that accepts any password).
    ///   - metricsFactory: where the server's metrics go (a test's own `TestMetrics`).
    public init(
        loop: RunLoop = .current, clock: ManualClock, settings: IMServer.Settings = IMServer.Settings(),
        store: any IMServerStore = InMemoryIMStore(), metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.loop = loop
        self.clock = clock
        server = IMServer(store: store, settings: settings, loop: loop, metricsFactory: metricsFactory)
        links = MemoryLinkConnector(server: server)
    }

    /// A client connected through memory links, started unless `start` is false.
    @discardableResult
    public func client(_ configuration: IMClientConfiguration, start: Bool = true) -> IMClient {
        let client = IMClient(configuration: configuration, loop: loop, connector: links.connector)
        clients.append(client)
        if start { client.start() }
        return client
    }

    /// Runs the loop for `duration` of the manual clock: every timer due in it fires, in order.
    public func advance(by duration: Duration) throws {
        let end = clock.now + duration
        while clock.now < end {
            // A loop with nothing left to run does not move the clock: time passes all the same.
            if try loop.run(.default, until: end) == .finished { clock.advance(to: end) }
        }
    }

    /// Runs the loop until `condition` holds or `timeout` of the manual clock passed; whether it held.
    @discardableResult
    public func runUntil(timeout: Duration = .seconds(60), _ condition: @escaping () -> Bool) throws -> Bool {
        try loop.runUntil(timeout: timeout, condition)
    }

    /// Closes every client and shuts the server down, then lets the loop finish their goodbyes.
    public func close() throws {
        for client in clients { client.close() }
        try runUntil(timeout: .seconds(30)) { [clients] in
            clients.allSatisfy { if case .closed = $0.state { return true } else { return false } }
        }
        server.shutdown()
        try advance(by: .seconds(1))
    }
}
