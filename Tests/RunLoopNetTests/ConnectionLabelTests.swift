import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// What a trace calls a connection's sources: its owner's label, else its socket. Over loopback
/// (port 0), on the system clock.
@Suite struct ConnectionLabelTests {
    /// The port callouts' labels of one echo: the client labelled `client` before it connects, each
    /// accepted connection labelled `server` in `onAccept`.
    private func portCalloutLabels(client: String?, server: String?) throws -> Set<String> {
        let loop = RunLoop.current
        let labels = LockedBox(Set<String>())
        let observer = RunLoopCalloutObserver(label: "test") { callout in
            if callout.kind == .port, callout.end == nil, let label = callout.label { labels.update { _ = $0.insert(label) } }
        }
        loop.add(observer)
        defer { observer.invalidate() }
        let listener = TCPListener()
        listener.onAccept = { _, connection in
            connection.label = server
            connection.onData = { connection, bytes in try? connection.write(bytes) }
        }
        try listener.listen(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        var echoed = false
        let connection = TCPConnection()
        connection.label = client
        connection.onConnect = { connection in
            try? connection.write(bytes("hello"))
            connection.read(exactly: 5) { connection, _ in
                echoed = true
                connection.close()
            }
        }
        connection.connect(to: "127.0.0.1", port: listener.port, timeout: .seconds(5))
        try spin(loop) { echoed }
        return labels.get()
    }

    @Test("a labelled connection's sources are named by its owner at both ends, not by their descriptors")
    func labelledConnection() async throws {
        let labels = try await onLoopThread { try portCalloutLabels(client: "alice ↔ node", server: "node ↔ alice") }
        #expect(labels.isSuperset(of: ["alice ↔ node", "node ↔ alice"]), "\(labels)")
        #expect(!labels.contains { $0.hasPrefix("tcp read") }, "\(labels)")
    }

    @Test("an unlabelled connection's sources are named by their socket, as before")
    func unlabelledConnection() async throws {
        let labels = try await onLoopThread { try portCalloutLabels(client: nil, server: nil) }
        #expect(labels.contains { $0.hasPrefix("tcp read ") }, "\(labels)")
    }
}
