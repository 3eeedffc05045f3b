import ChatNodeKit
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite
import RunLoopIMWebSocket
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// One sample of a Prometheus text page: `name{label="value",…} number`.
struct PrometheusSample: Equatable {
    var name: String
    var labels: [String: String]
    var value: Double

    /// Every sample line of `text` (comments skipped); a line that is not a sample fails the test.
    static func parse(_ text: String) -> [PrometheusSample] {
        text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            let sample = parseLine(Substring(line))
            if sample == nil { Issue.record("not a Prometheus sample: \(line)") }
            return sample
        }
    }

    private static func parseLine(_ line: Substring) -> PrometheusSample? {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
        let series = line[..<space]
        guard let brace = series.firstIndex(of: "{") else { return PrometheusSample(name: String(series), labels: [:], value: value) }
        guard series.hasSuffix("}") else { return nil }
        var labels: [String: String] = [:]
        // Label values here never hold a comma or a quote (transports, results, codes, modes).
        for pair in series[series.index(after: brace)..<series.index(before: series.endIndex)].split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[1].hasPrefix("\""), parts[1].hasSuffix("\"") else { return nil }
            labels[String(parts[0])] = String(parts[1].dropFirst().dropLast())
        }
        return PrometheusSample(name: String(series[..<brace]), labels: labels, value: value)
    }
}

extension [PrometheusSample] {
    /// The value of the one series with this name and these labels; `nil` when there is none.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        first { $0.name == name && $0.labels == labels }?.value
    }

    /// The sum over every series of `name` (whatever their labels).
    func total(_ name: String) -> Double {
        filter { $0.name == name }.reduce(0) { $0 + $1.value }
    }
}

@Suite("Chat node: /health, /ready, /metrics, HEAD and the favicon")
struct OperationsEndpointTests {
    static func head(_ line: String) -> [UInt8] { Array((line + "\r\nHost: x\r\n\r\n").utf8) }

    @Test("the operations paths route to their cases; HEAD wraps the GET's route; HEAD /ws and other methods are 405 naming GET and HEAD")
    func routes() {
        #expect(ChatWebRoute.route(Self.head("GET /health HTTP/1.1")) == .health)
        #expect(ChatWebRoute.route(Self.head("GET /ready HTTP/1.1")) == .ready)
        #expect(ChatWebRoute.route(Self.head("GET /metrics?x=1 HTTP/1.1")) == .metrics)
        #expect(ChatWebRoute.route(Self.head("GET /favicon.ico HTTP/1.1")) == .favicon)
        #expect(ChatWebRoute.route(Self.head("HEAD /metrics HTTP/1.1")) == .headOnly(.metrics))
        #expect(ChatWebRoute.route(Self.head("HEAD / HTTP/1.1")) == .headOnly(ChatWebRoute.route(Self.head("GET / HTTP/1.1"))))
        guard case .headOnly(.refuse(let missing)) = ChatWebRoute.route(Self.head("HEAD /nope HTTP/1.1")) else {
            Issue.record("HEAD of a missing page is not the GET's 404")
            return
        }
        #expect(missing.status == 404)
        guard case .headOnly(.refuse(let upgrade)) = ChatWebRoute.route(Self.head("HEAD /ws HTTP/1.1")) else {
            Issue.record("HEAD /ws is not refused")
            return
        }
        #expect(upgrade.status == 405 && upgrade.extraFields == ["Allow: GET, HEAD"])
        guard case .refuse(let put) = ChatWebRoute.route(Self.head("PUT /health HTTP/1.1")) else {
            Issue.record("PUT is not refused")
            return
        }
        #expect(put.status == 405 && put.extraFields == ["Allow: GET, HEAD"])
    }

    @Test("a HEAD answer is the GET's head to its blank line, Content-Length included, and no body")
    func headOnly() {
        let get = HTTPAnswer.text("ok").bytes
        let head = String(decoding: HTTPAnswer.headOnly(get), as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.hasSuffix("Content-Length: 3\r\nConnection: close\r\n\r\n"))
        #expect(String(decoding: get, as: UTF8.self) == head + "ok\n")
        #expect(HTTPAnswer.headOnly(Array("no blank line".utf8)) == Array("no blank line".utf8))
    }

    @Test("ready only with the store reachable, the cluster's Redis connected and the node not stopping; each refusal says why")
    func readinessDecision() {
        #expect(NodeReadiness.decide(storage: .sqlite(isOpen: true), redisConnected: nil, isStopping: false) == .ready)
        #expect(NodeReadiness.decide(storage: .postgres(.connected), redisConnected: true, isStopping: false) == .ready)
        #expect(
            NodeReadiness.decide(storage: .sqlite(isOpen: false), redisConnected: nil, isStopping: false)
                == .notReady(reason: "the SQLite database is closed"))
        #expect(
            NodeReadiness.decide(storage: .postgres(.waiting(until: LoopInstant(nanoseconds: 5))), redisConnected: true, isStopping: false)
                == .notReady(reason: "PostgreSQL is not connected (unreachable, retrying)"))
        for state: ReconnectingLinkState in [.idle, .connecting, .gaveUp, .closed] {
            guard case .notReady = NodeReadiness.decide(storage: .postgres(state), redisConnected: nil, isStopping: false) else {
                Issue.record("ready with PostgreSQL \(state)")
                continue
            }
        }
        #expect(
            NodeReadiness.decide(storage: .postgres(.connected), redisConnected: false, isStopping: false)
                == .notReady(reason: "the cluster's Redis is not connected"))
        #expect(
            NodeReadiness.decide(storage: .sqlite(isOpen: true), redisConnected: nil, isStopping: true)
                == .notReady(reason: "the node is stopping"))
    }

    @Test(
        "over loopback: /metrics counts logins, sessions by transport, a message stored and delivered, store time and loop iterations; /health, /ready (503 once the file is closed), HEAD and the favicon"
    )
    func scrape() async throws {
        try await onLoopThread {
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            try Self.scrape(ChatNode(configuration: nodeConfiguration(path, httpPort: 0)))
        }
    }

    /// Loop thread.
    static func scrape(_ node: ChatNode) throws {
        let loop = node.loop
        try node.start()
        defer { node.abort() }
        let stalls = node.configuration.metrics.watchStalls(of: loop, threshold: .seconds(10))
        defer { stalls.detach() }
        let webPort = try #require(node.webPort)

        let alice = client("alice", port: node.port)
        let bob = IMClient(configuration: clientConfiguration("bob"), connector: WebSocketFrameLink.connector(host: "127.0.0.1", port: webPort))
        alice.start()
        bob.start()
        try #require(try spin(loop) { alice.state == .online && bob.state == .online })
        let impostor = client("alice", password: "guess", port: node.port)
        impostor.start()
        defer { impostor.close() }

        let before = try scrapeMetrics(loop, webPort) { $0.value("im_logins_total", ["result": "failed"]) == 1 }
        #expect(before.value("im_logins_total", ["result": "ok"]) == 2)
        #expect(before.value("im_sessions", ["transport": "tcp"]) == 1)
        #expect(before.value("im_sessions", ["transport": "websocket"]) == 1)
        #expect(before.value("im_messages_stored_total") == 0)

        var received: [String] = []
        bob.onMessage = { _, message in received.append(message.text) }
        _ = try alice.send("hello bob", to: .user("bob"))
        try #require(try spin(loop) { received == ["hello bob"] })
        let after = try scrapeMetrics(loop, webPort) { $0.value("im_deliveries_unacknowledged") == 0 }
        #expect(after.value("im_messages_stored_total") == 1)
        #expect(after.value("im_messages_delivered_total") == 1)
        #expect((after.value("im_store_call_duration_seconds_count", ["call": "store"]) ?? 0) >= 1)
        #expect(after.total("runloop_iterations_total") > before.total("runloop_iterations_total"))
        #expect(after.total("runloop_stalls_total") == 0)

        alice.close()
        try #require(try spin(loop) { alice.state == .closed(.userClosed) })
        let closed = try scrapeMetrics(loop, webPort) { $0.value("im_sessions", ["transport": "tcp"]) == 0 }
        #expect(closed.value("im_sessions", ["transport": "websocket"]) == 1)
        bob.close()

        let health = try get(loop, webPort, "GET /health")
        #expect(health.hasPrefix("HTTP/1.1 200 OK\r\n") && health.hasSuffix("\r\n\r\nok\n"))
        #expect(try get(loop, webPort, "GET /ready").hasSuffix("\r\n\r\nready\n"))
        let favicon = try get(loop, webPort, "GET /favicon.ico")
        #expect(favicon.hasPrefix("HTTP/1.1 204 No Content\r\n") && favicon.hasSuffix("\r\n\r\n"))
        let page = try get(loop, webPort, "GET /")
        let pageHead = try get(loop, webPort, "HEAD /")
        #expect(
            pageHead.hasPrefix("HTTP/1.1 200 OK\r\n") && pageHead.hasSuffix("\r\n\r\n") && page.hasPrefix(pageHead) && page.count > pageHead.count)
        let metricsHead = try get(loop, webPort, "HEAD /metrics")
        #expect(metricsHead.hasPrefix("HTTP/1.1 200 OK\r\n") && metricsHead.hasSuffix("\r\n\r\n"))

        node.sqliteStore?.database.close()
        let notReady = try get(loop, webPort, "GET /ready")
        #expect(notReady.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n") && notReady.hasSuffix("not ready: the SQLite database is closed\n"))
    }

    @Test("on PostgreSQL: /ready is 200 while it is connected, 503 naming PostgreSQL while it is stopped, 200 again after its restart")
    func readinessFollowsPostgreSQL() async throws {
        let database = try await ChatPostgres.start()
        try await onLoopThread {
            var configuration = nodeConfiguration(database)
            configuration.httpPort = 0
            let node = try ChatNode(configuration: configuration)
            try node.start()
            defer { node.abort() }
            let port = try #require(node.webPort)
            let ready = { (answer: String) in answer.hasSuffix("\r\n\r\nready\n") }
            #expect(ready(try Self.ask(node.loop, port, "GET /ready", until: ready)))
            database.server.stop()
            let down = try Self.ask(node.loop, port, "GET /ready") { $0.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n") }
            #expect(down.contains("\r\n\r\nnot ready: PostgreSQL is not connected ("), "\(down)")
            try database.server.restart()
            #expect(ready(try Self.ask(node.loop, port, "GET /ready", until: ready)))
        }
    }

    /// One request's whole answer, once the node closed the connection.
    static func get(_ loop: RunLoop, _ port: UInt16, _ requestLine: String) throws -> String {
        let request = RawHTTP(port: port, request: requestLine + " HTTP/1.1\r\nHost: x\r\n\r\n")
        try #require(try spin(loop) { request.isClosed })
        return request.text
    }

    /// Asks `requestLine` until its answer satisfies `until` (what it reports moves on the loop, an
    /// answer may come first), for at most 30 s of the loop's clock; the last answer.
    static func ask(_ loop: RunLoop, _ port: UInt16, _ requestLine: String, until: (String) -> Bool) throws -> String {
        let deadline = loop.now + .seconds(30)
        var answer = try get(loop, port, requestLine)
        while !until(answer) {
            guard loop.now < deadline else {
                Issue.record("\(requestLine) never got there: \(answer)")
                return answer
            }
            try loop.run(.default, timeout: .milliseconds(20))
            answer = try get(loop, port, requestLine)
        }
        return answer
    }

    /// Scrapes `/metrics` until `until` holds of its samples; the last scrape's.
    static func scrapeMetrics(_ loop: RunLoop, _ port: UInt16, until: ([PrometheusSample]) -> Bool) throws -> [PrometheusSample] {
        var samples: [PrometheusSample] = []
        _ = try ask(loop, port, "GET /metrics") { answer in
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n") && answer.contains("Content-Type: text/plain; version=0.0.4"))
            samples = PrometheusSample.parse(String(answer.split(separator: "\r\n\r\n", maxSplits: 1).last ?? ""))
            return until(samples)
        }
        return samples
    }
}
