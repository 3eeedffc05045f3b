import ChatNodeKit
import Logging
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite
import RunLoopKit
import RunLoopTesting
import Testing

/// ``NodeReloader`` on a node in this process: what a SIGHUP changes in the server, the log level,
/// and what it logs.
@Suite("Node reloader")
struct NodeReloaderTests {
    @Test("a reload gives the server the new limits and the loggers the new level, logs each change, and keeps the port")
    func applies() async throws {
        try await onLoopThread {
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            let node = try ChatNode(configuration: nodeConfiguration(path))
            let capture = CapturingLogHandler()
            node.logger = Logger(label: "test") { _ in capture }
            let level = LiveLogLevel(.info)
            var next = NodeSettings()
            next.maximumConnections = 3
            next.maximumSessionsPerUser = 2
            next.messagesPerSecond = 7
            next.logLevel = .debug
            next.port = 9999
            var loaded: Result<NodeSettings, ConfigErrors> = .success(next)
            let reloader = NodeReloader(node: node, running: NodeSettings(), logLevel: level) { loaded }

            reloader.reload()
            #expect(node.server.settings.maximumConnections == 3)
            #expect(node.server.settings.maximumSessionsPerUser == 2)
            #expect(node.server.settings.session.maximumMessagesPerSecond == 7)
            #expect(node.configuration.maximumConnections == 3)
            #expect(level.level == .debug)
            #expect(reloader.running.port == 7100)
            let lines = capture.records.get().map(\.message)
            #expect(lines.contains("configuration reloaded: max-connections: 1024 → 3"))
            #expect(lines.contains("configuration: port: 7100 → 9999 needs a restart; keeping 7100"))

            loaded = .failure(ConfigErrors([ConfigProblem(.environment("CHAT_NODE_PORT"), key: "port", "expected an integer, found \"x\"")]))
            reloader.reload()
            #expect(node.server.settings.maximumConnections == 3)
            #expect(level.level == .debug)
            #expect(capture.records.get().last?.message == "  CHAT_NODE_PORT: port: expected an integer, found \"x\"")
            #expect(capture.records.get().last?.level == .error)
            node.sqliteStore?.database.close()
        }
    }
}
