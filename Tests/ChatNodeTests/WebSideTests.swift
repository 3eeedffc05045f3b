import ChatNodeKit
import Foundation
import Glibc
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMWebSocket
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// Foundation has a RunLoop too; these tests mean RunLoopKit's.
private typealias RunLoop = RunLoopKit.RunLoop

@Suite("Chat node: HTTP routes and the embedded page")
struct WebRouteTests {
    static func head(_ lines: String...) -> [UInt8] { Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) }

    @Test(
        "GET / and the page's files are served; /ws goes to the WebSocket handshake; other paths 404, other methods 405, bad heads 400, other HTTP versions 505"
    )
    func routes() {
        guard case .asset(let index) = ChatWebRoute.route(Self.head("GET / HTTP/1.1", "Host: x")) else { Issue.record("no page"); return }
        #expect(index.name == "index.html" && index.contentType == "text/html; charset=utf-8")
        guard case .asset(let script) = ChatWebRoute.route(Self.head("GET /app.js?v=1 HTTP/1.1", "Host: x")) else {
            Issue.record("no script"); return
        }
        #expect(script.contentType.hasPrefix("text/javascript") && script.body == WebAssets.files["app.js"])
        #expect(ChatWebRoute.route(Self.head("GET /ws?session=1 HTTP/1.1", "Host: x")) == .webSocket)
        func status(_ head: [UInt8]) -> Int? {
            if case .refuse(let refusal) = ChatWebRoute.route(head) { return refusal.status }
            return nil
        }
        #expect(status(Self.head("GET /nope HTTP/1.1", "Host: x")) == 404)
        #expect(status(Self.head("GET /../etc/passwd HTTP/1.1", "Host: x")) == 404)
        #expect(status(Self.head("POST / HTTP/1.1", "Host: x")) == 405)
        #expect(status(Self.head("DELETE /ws HTTP/1.1", "Host: x")) == 405)
        #expect(status(Array("\u{1}\u{2}garbage\r\n\r\n".utf8)) == 400)
        #expect(status(Self.head("GET / HTTP/2.0", "Host: x")) == 505)
        #expect(status(Self.head("GET / HTTP/1.0")) == nil, "an HTTP/1.0 client gets the page")
    }

    @Test("the WebSocket is for the node's own page and for clients that are not pages: another site's Origin gets 403")
    func originPolicy() throws {
        func request(_ fields: [String]) throws -> WebSocketUpgradeRequest {
            let head =
                ([
                    "GET /ws HTTP/1.1", "Upgrade: websocket", "Connection: Upgrade",
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"
                ] + fields + ["", ""])
                .joined(separator: "\r\n")
            return try WebSocketHandshake.validateRequest(Array(head.utf8)).get()
        }
        #expect(OriginPolicy.refusal(for: try request(["Host: 127.0.0.1:7101"])) == nil, "no Origin: not a page")
        #expect(OriginPolicy.refusal(for: try request(["Host: 127.0.0.1:7101", "Origin: http://127.0.0.1:7101"])) == nil)
        #expect(OriginPolicy.refusal(for: try request(["Host: Chat.example:443", "Origin: https://chat.example:443"])) == nil)
        for foreign in ["http://evil.example", "http://127.0.0.1:7102", "null", "file://", "http://127.0.0.1:7101.evil.example"] {
            #expect(OriginPolicy.refusal(for: try request(["Host: 127.0.0.1:7101", "Origin: \(foreign)"]))?.status == 403, "\(foreign)")
        }
    }

    @Test("the embedded page is exactly Samples/ChatNode/Web (run Scripts/embed-web-assets.sh after editing it)")
    func embeddedPageMatchesSources() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Samples/ChatNode/Web")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(names == WebAssets.files.keys.sorted(), "files added or removed: run Scripts/embed-web-assets.sh")
        for name in names {
            let source = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            #expect(WebAssets.files[name] == source, "\(name) changed: run Scripts/embed-web-assets.sh")
        }
    }
}

/// One HTTP exchange on a raw TCP connection: the request as given, everything until the node closes.
final class RawHTTP {
    let connection = TCPConnection()
    var received: [UInt8] = []
    var isClosed = false

    init(port: UInt16, request: String) {
        connection.onConnect = { connection in try? connection.write(Array(request.utf8)) }
        connection.onData = { [weak self] _, bytes in self?.received += bytes }
        connection.onClose = { [weak self] _, _ in self?.isClosed = true }
        connection.connect(to: "127.0.0.1", port: port)
    }

    var text: String { String(decoding: received, as: UTF8.self) }
}

/// A WebSocket client that sends what a test tells it and keeps what comes back and how it closed.
final class WebSocketPeer {
    let connection = WebSocketConnection()
    var messages: [WebSocketMessage] = []
    var isOpen = false
    var closeInfo: WebSocketCloseInfo?

    init(port: UInt16) {
        connection.onOpen = { [weak self] _ in self?.isOpen = true }
        connection.onMessage = { [weak self] _, message in self?.messages.append(message) }
        connection.onClose = { [weak self] _, info in self?.closeInfo = info }
        connection.connect(host: "127.0.0.1", port: port, target: ChatWebRoute.webSocketPath)
    }

    /// The last ERROR frame received.
    var lastError: IMFrame? { frames.last { $0.command == .error } }
    /// Whether the last message was text (`nil`: none came).
    var lastWasText: Bool? {
        guard let last = messages.last else { return nil }
        if case .text = last { return true }
        return false
    }

    /// Where the connection is stuck, for a failure message.
    var diagnosis: String {
        "\(connection.state) over \(connection.tcp), \(messages.count) messages in, "
            + "\(connection.tcp.bufferedOutputBytes) bytes queued out, unread input: \(connection.tcp.hasUnreadInput)"
    }

    /// The IM frames received, whichever encoding carried them.
    var frames: [IMFrame] {
        messages.compactMap { message in
            switch message {
            case .text(let text): return try? IMJSONEnvelope.decode(text)
            case .binary(let bytes): return try? WebSocketFrameLink.frame(fromBinary: bytes, maximumBodyLength: 1 << 16).get()
            }
        }
    }
}

/// What the bad-input test observes from callbacks (a class: Swift 6.3's region checker crashes on
/// mutable locals captured by escaping closures in long test bodies).
final class WebBadInputObservations {
    var refusedStatuses: [Int] = []
    var tomGot: [String] = []
    var stopped = false
}

@Suite("Chat node: bad input on the HTTP and WebSocket side")
struct WebBadInputTests {
    @Test(
        "unknown path, non-GET, bad upgrade, bad JSON, unknown command, a binary message that is no IM frame, an oversized one: each gets its status or ERROR and close code; logged-in clients are unaffected"
    )
    func badInput() async throws {
        try await onLoopThread { try Self.badInputOnLoop() }
    }

    static func badInputOnLoop() throws {
        let loop = RunLoop.current
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let node = try ChatNode(configuration: nodeConfiguration(path, httpPort: 0))
        try node.start()
        defer { node.abort() }
        let webPort = try #require(node.webPort)
        let seen = WebBadInputObservations()
        node.web?.onRefused = { seen.refusedStatuses.append($0.status) }

        // Bystanders: one over WebSocket, one over TCP, logged in throughout.
        let browserLike = IMClient(
            configuration: IMClientConfiguration(user: "wendy", password: "pw"),
            connector: WebSocketFrameLink.connector(host: "127.0.0.1", port: webPort))
        // A long heartbeat: under the thread sanitizer with the whole suite running, this loop can be
        // starved for seconds, and a bystander dropped by the keepalive rule would prove nothing about
        // bad input.
        let terminalLike = client("tom", port: node.port, heartbeat: .seconds(60))
        browserLike.start()
        terminalLike.start()
        try #require(try spin(loop) { browserLike.state == .online && terminalLike.state == .online })

        try checkHTTPRefusals(loop: loop, port: webPort, seen: seen)
        try checkWebSocketViolations(loop: loop, port: webPort)

        // The bystanders never noticed.
        #expect(browserLike.state == .online && terminalLike.state == .online)
        terminalLike.onMessage = { _, message in seen.tomGot.append(message.text) }
        _ = try browserLike.send("still here", to: .user("tom"))
        try #require(try spin(loop) { seen.tomGot == ["still here"] })
        browserLike.close()
        terminalLike.close()
        try #require(try spin(loop) { browserLike.state == .closed(.userClosed) && terminalLike.state == .closed(.userClosed) })
        node.stop { seen.stopped = true }
        try #require(try spin(loop) { seen.stopped })
    }

    fileprivate static func checkHTTPRefusals(loop: RunLoop, port: UInt16, seen: WebBadInputObservations) throws {
        let page = RawHTTP(port: port, request: "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let missing = RawHTTP(port: port, request: "GET /missing HTTP/1.1\r\nHost: x\r\n\r\n")
        let post = RawHTTP(port: port, request: "POST /ws HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        let oldVersion = RawHTTP(
            port: port,
            request: "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n")
        let notUpgrade = RawHTTP(port: port, request: "GET /ws HTTP/1.1\r\nHost: x\r\n\r\n")
        try #require(try spin(loop) { [page, missing, post, oldVersion, notUpgrade].allSatisfy(\.isClosed) })
        #expect(page.text.hasPrefix("HTTP/1.1 200 OK\r\n") && page.text.hasSuffix(WebAssets.files["index.html"] ?? "?"))
        #expect(missing.text.hasPrefix("HTTP/1.1 404 Not Found\r\n"), "\(missing.text)")
        #expect(post.text.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n"), "\(post.text)")
        #expect(oldVersion.text.hasPrefix("HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\n"), "\(oldVersion.text)")
        #expect(notUpgrade.text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(notUpgrade.text)")
        #expect(seen.refusedStatuses.sorted() == [400, 404, 405, 426])
    }

    /// WebSocket peers that break the IM protocol, each in its own way.
    fileprivate static func checkWebSocketViolations(loop: RunLoop, port: UInt16) throws {
        let badJSON = WebSocketPeer(port: port)
        let unknownCommand = WebSocketPeer(port: port)
        let notAFrame = WebSocketPeer(port: port)
        let tooLarge = WebSocketPeer(port: port)
        let mixed = WebSocketPeer(port: port)
        let tooLargeJSON = WebSocketPeer(port: port)
        let peers = [badJSON, unknownCommand, notAFrame, tooLarge, mixed, tooLargeJSON]
        try #require(try spin(loop) { peers.allSatisfy(\.isOpen) })
        try badJSON.connection.send(text: "{not json")
        try unknownCommand.connection.send(text: #"{"command":"FLY","serial":3}"#)
        try notAFrame.connection.send(binary: Array("hello".utf8))
        var oversized = IMFrame(command: .send, serial: 4).encoded()
        oversized.replaceSubrange(0..<4, with: [0x00, 0x10, 0x00, 0x00])  // announces a 1 MiB body
        try tooLarge.connection.send(binary: oversized)
        // Within the WebSocket message limit but over the IM body limit once re-encoded: refused as the
        // binary frame would be (a SEND is the one exception: the session answers it, see WebOversizedSendTests).
        let big = String(repeating: "x", count: 70 * 1024)
        try tooLargeJSON.connection.send(text: #"{"command":"HEARTBEAT","serial":9}"#)
        try tooLargeJSON.connection.send(text: #"{"command":"JOIN","serial":10,"body":{"room":"\#(big)"}}"#)
        try mixed.connection.send(text: #"{"command":"HEARTBEAT","serial":1}"#)
        try mixed.connection.send(binary: IMFrame(command: .heartbeat, serial: 2).encoded())
        let allClosed = try spin(loop) { peers.allSatisfy { $0.closeInfo != nil } }
        try #require(allClosed, "peers still open: \(peers.filter { $0.closeInfo == nil }.map(\.diagnosis))")

        #expect(badJSON.lastError?.code == .badRequest && badJSON.closeInfo?.code == .policyViolation)
        #expect(badJSON.lastWasText == true, "a JSON client is answered in JSON: \(badJSON.messages)")
        #expect(unknownCommand.lastError?.code == .unknownCommand && unknownCommand.lastError?.serial == 3)
        #expect(unknownCommand.closeInfo?.code == .policyViolation)
        #expect(notAFrame.lastError?.code == .badRequest && notAFrame.closeInfo?.code == .policyViolation)
        #expect(notAFrame.lastWasText == false, "a binary client is answered in binary: \(notAFrame.messages)")
        #expect(tooLarge.lastError?.code == .frameTooLarge && tooLarge.closeInfo?.code == .messageTooBig)
        #expect(tooLargeJSON.lastError?.code == .frameTooLarge && tooLargeJSON.lastError?.serial == 10)
        #expect(tooLargeJSON.closeInfo?.code == .messageTooBig && tooLargeJSON.lastWasText == true)
        #expect(mixed.frames.first?.command == .heartbeatAck && mixed.lastError?.code == .badRequest, "\(mixed.messages)")
        for peer in peers { #expect(peer.closeInfo?.initiatedByPeer == true, "the node closed it: \(String(describing: peer.closeInfo))") }
    }
}

@Suite("Chat node: a JSON client")
struct WebJSONClientTests {
    @Test("a WebSocket client speaking the JSON envelope logs in, sends, receives and acknowledges — every answer in JSON, 64-bit fields as strings")
    func jsonSession() async throws {
        try await onLoopThread { try Self.jsonSessionOnLoop() }
    }

    static func jsonSessionOnLoop() throws {
        let loop = RunLoop.current
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let node = try ChatNode(configuration: nodeConfiguration(path, httpPort: 0))
        try node.start()
        defer { node.abort() }
        let tom = client("tom", port: node.port)
        tom.start()
        try #require(try spin(loop) { tom.state == .online })

        let browser = WebSocketPeer(port: try #require(node.webPort))
        try #require(try spin(loop) { browser.isOpen })
        func answer(_ serial: UInt32) -> IMFrame? { browser.frames.first { $0.serial == serial && $0.command != .deliver } }
        try browser.connection.send(text: #"{"command":"LOGIN","serial":1,"body":{"user":"jo","password":"pw","keepaliveSeconds":30}}"#)
        try #require(try spin(loop) { answer(1) != nil })
        let login = try #require(answer(1))
        let response = try login.decode(IMLoginResponse.self)
        #expect(login.command == .loginAck && login.code == .ok && response.user == "jo")
        try browser.connection.send(text: #"{"command":"SEND","serial":2,"body":{"id":"j-1","user":"tom","text":"hi tom"}}"#)
        try #require(try spin(loop) { answer(2) != nil })
        #expect(answer(2)?.command == .sendAck && answer(2)?.code == .ok)
        #expect(browser.messages.allSatisfy { if case .text = $0 { return true } else { return false } }, "answered in JSON")
        let ack = try #require(
            browser.messages.compactMap { if case .text(let text) = $0, text.contains("SEND_ACK") { return text } else { return nil } }.first)
        #expect(ack.contains(#""seq":""#), "64-bit integers are strings in the canonical mapping: \(ack)")

        _ = try tom.send("hi jo", to: .user("jo"))
        try #require(try spin(loop) { browser.frames.contains { $0.command == .deliver } })
        let deliver = try #require(browser.frames.first { $0.command == .deliver })
        let message = try deliver.decode(IMChatMessage.self)
        #expect(message.from == "tom" && message.text == "hi jo")
        try browser.connection.send(text: #"{"command":"DELIVER_ACK","serial":3,"body":{"seqs":["\#(message.seq)"]}}"#)
        try #require(try spin(loop) { (try? node.sqliteStore?.undelivered(for: "jo"))?.isEmpty == true })
        tom.close()
        try spin(loop) { tom.state == .closed(.userClosed) }
    }
}

/// A WebSocket client written by hand on a raw TCP connection: it sends exactly the bytes a test
/// composes (a LOGIN and a close frame in one write) and keeps its end of TCP open after the node's
/// close frame and end of stream, as a stalled or careless client can — so the node's close handshake
/// lingers until its close timeout.
final class LingeringWebSocketPeer {
    let tcp = TCPConnection()
    private(set) var upgraded = false

    init(port: UInt16) {
        tcp.allowsHalfClosure = true
        let key = WebSocketHandshake.randomKey()
        tcp.onConnect = { tcp in
            try? tcp.write(WebSocketHandshake.request(host: "127.0.0.1", port: port, target: ChatWebRoute.webSocketPath, key: key))
        }
        tcp.read(upTo: [13, 10, 13, 10], maximumLength: 4096, timeout: .seconds(30)) { [weak self] tcp, _ in
            self?.upgraded = true
            tcp.onData = { _, _ in }
        }
        tcp.connect(to: "127.0.0.1", port: port)
    }

    /// Sends a LOGIN for `user` (binary or as a JSON envelope) and a close frame, in one write.
    func loginAndClose(_ user: String, password: String, json: Bool) {
        var request = IMLoginRequest()
        request.user = user
        request.password = password
        let frame = IMFrame(command: .login, serial: 1, message: request)
        let login =
            json
            ? WebSocketFrame(opcode: .text, payload: Array(IMJSONEnvelope.encode(frame).utf8))
            : WebSocketFrame(opcode: .binary, payload: frame.encoded())
        let close = WebSocketFrame(opcode: .close, payload: WebSocketMessageAssembler.closePayload(code: .normalClosure, reason: ""))
        try? tcp.write(login.encoded(maskingKey: WebSocketMask.randomKey()) + close.encoded(maskingKey: WebSocketMask.randomKey()))
    }
}

/// Who a client believes is online, from the PRESENCE notices it got (loop thread only).
final class PresenceList {
    var online: Set<String> = []
    /// Password checks the node started and finished (counted around its authenticator).
    var checksStarted = 0
    var checksDecided = 0

    func take(_ change: PresenceChange) {
        if change.isOnline { online.insert(change.user) } else { online.remove(change.user) }
    }
}

@Suite("Chat node: WebSocket logins whose connection goes away")
struct WebGhostLoginTests {
    @Test(
        "five WebSocket LOGINs, each followed at once by a close frame while scrypt runs (the peer keeping TCP open), leave no session and no one online for the node or a bystander's presence list; the real user then logs in"
    )
    func ghostLogins() async throws {
        try await onLoopThread { try Self.ghostLoginsOnLoop() }
    }

    static func ghostLoginsOnLoop() throws {
        let loop = RunLoop.current
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let node = try ChatNode(configuration: nodeConfiguration(path, httpPort: 0))
        try node.start()
        defer { node.abort() }
        let webPort = try #require(node.webPort)
        #expect(try node.addAccount(user: "ann", password: "pw"))
        let seen = PresenceList()
        // Counts the node's own password checks, so the test knows every late verdict has come.
        let check = try #require(node.server.authenticator)
        node.server.authenticator = { request, verdict in
            seen.checksStarted += 1
            check(request) { answer in
                seen.checksDecided += 1
                verdict(answer)
            }
        }
        let tom = client("tom", port: node.port, heartbeat: .seconds(60))
        let tomsChat = ChatClient(connection: tom)
        tomsChat.onPresence = { _, change in seen.take(change) }
        tom.start()
        try #require(try spin(loop) { tom.state == .online && seen.checksDecided == 1 })
        // A direct conversation makes tom one of ann's contacts: her presence is his to see.
        _ = try tomsChat.send("hello ann", to: .user("ann"))

        for attempt in 0..<5 {
            let peer = LingeringWebSocketPeer(port: webPort)
            try #require(try spin(loop) { peer.upgraded && node.server.sessions.count == 2 }, "attempt \(attempt)")
            peer.loginAndClose("ann", password: "pw", json: attempt % 2 == 1)
            try #require(try spin(loop) { node.server.sessions.count == 1 }, "attempt \(attempt) kept its session")
        }
        try #require(try spin(loop) { seen.checksDecided == seen.checksStarted })
        #expect(node.server.onlineUsers == ["tom"], "ghosts: \(node.server.onlineUsers)")
        #expect(!seen.online.contains("ann"), "tom's presence list shows a user with no connection")

        let ann = IMClient(
            configuration: IMClientConfiguration(user: "ann", password: "pw"),
            connector: WebSocketFrameLink.connector(host: "127.0.0.1", port: webPort))
        ann.start()
        try #require(try spin(loop) { ann.state == .online }, "the real user was refused: \(ann.state)")
        try #require(try spin(loop) { seen.online.contains("ann") })
        #expect(node.server.onlineUsers == ["ann", "tom"])
        ann.close()
        tom.close()
        try spin(loop) { ann.state == .closed(.userClosed) && tom.state == .closed(.userClosed) }
    }
}

@Suite("Chat node: an oversized paste over WebSocket")
struct WebOversizedSendTests {
    @Test(
        "a 70,000-character paste over WebSocket — JSON escaped at 6 bytes a character, or binary — gets SEND_ACK frameTooLarge with its id, and the session stays up: it answers a HEARTBEAT and takes the next SEND; the recipient gets only that one"
    )
    func pasteIsRefusedNotFatal() async throws {
        try await onLoopThread { try Self.pasteOnLoop() }
    }

    static func pasteOnLoop() throws {
        let loop = RunLoop.current
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let node = try ChatNode(configuration: nodeConfiguration(path, httpPort: 0))
        try node.start()
        defer { node.abort() }
        let webPort = try #require(node.webPort)
        let tomGot = WebBadInputObservations()
        let tom = client("tom", port: node.port, heartbeat: .seconds(60))
        tom.onMessage = { _, message in tomGot.tomGot.append(message.text) }
        tom.start()
        try #require(try spin(loop) { tom.state == .online })

        let json = WebSocketPeer(port: webPort)
        let binary = WebSocketPeer(port: webPort)
        try #require(try spin(loop) { json.isOpen && binary.isOpen })
        func answer(_ peer: WebSocketPeer, _ serial: UInt32) -> IMFrame? { peer.frames.first { $0.serial == serial && $0.command != .presence } }
        try json.connection.send(text: #"{"command":"LOGIN","serial":1,"body":{"user":"jo","password":"pw","keepaliveSeconds":60}}"#)
        var login = IMLoginRequest()
        login.user = "bo"
        login.password = "pw"
        login.keepaliveSeconds = 60
        try binary.connection.send(binary: IMFrame(command: .login, serial: 1, message: login).encoded())
        try #require(try spin(loop) { answer(json, 1)?.code == .ok && answer(binary, 1)?.code == .ok })

        try json.connection.send(
            text: #"{"command":"SEND","serial":2,"body":{"id":"paste-1","user":"tom","text":""#
                + String(repeating: #"\u0001"#, count: 70_000) + #""}}"#)
        var paste = IMChatMessage()
        paste.id = "paste-2"
        paste.user = "tom"
        paste.text = String(repeating: "x", count: 70_000)
        try binary.connection.send(binary: IMFrame(command: .send, serial: 2, message: paste).encoded())
        try #require(
            try spin(loop) { answer(json, 2) != nil && answer(binary, 2) != nil },
            "\(json.closeInfo.map { "\($0)" } ?? "open"), \(binary.closeInfo.map { "\($0)" } ?? "open")")
        for (peer, id) in [(json, "paste-1"), (binary, "paste-2")] {
            let ack = try #require(answer(peer, 2))
            #expect(ack.command == .sendAck && ack.code == .frameTooLarge, "\(ack)")
            #expect(try ack.decode(IMSendAck.self).id == id)
        }

        try json.connection.send(text: #"{"command":"HEARTBEAT","serial":3}"#)
        try json.connection.send(text: #"{"command":"SEND","serial":4,"body":{"id":"short-1","user":"tom","text":"the short version"}}"#)
        try binary.connection.send(binary: IMFrame(command: .heartbeat, serial: 3).encoded())
        paste.id = "short-2"
        paste.text = "and mine"
        try binary.connection.send(binary: IMFrame(command: .send, serial: 4, message: paste).encoded())
        try #require(try spin(loop) { [json, binary].allSatisfy { answer($0, 4) != nil } })
        for peer in [json, binary] {
            #expect(answer(peer, 3)?.command == .heartbeatAck && answer(peer, 4)?.code == .ok && peer.closeInfo == nil)
        }
        try #require(try spin(loop) { tomGot.tomGot.count == 2 })
        #expect(Set(tomGot.tomGot) == ["the short version", "and mine"], "only the short ones were stored")
        tom.close()
        try spin(loop) { tom.state == .closed(.userClosed) }
    }
}

@Suite("Chat node: a graceful stop over WebSocket")
struct WebGracefulStopTests {
    @Test(
        "a node's graceful stop tells a WebSocket client shuttingDown, closes with 1001 and finishes the close handshake before it reports itself stopped (an exit then cannot turn it into 1006)"
    )
    func stopClosesWithGoingAway() async throws {
        try await onLoopThread { try Self.stopOnLoop() }
    }

    static func stopOnLoop() throws {
        let loop = RunLoop.current
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let node = try ChatNode(configuration: nodeConfiguration(path, httpPort: 0))
        try node.start()
        let web = try #require(node.web)
        let browser = WebSocketPeer(port: try #require(node.webPort))
        try #require(try spin(loop) { browser.isOpen })
        try browser.connection.send(text: #"{"command":"LOGIN","serial":1,"body":{"user":"jo","password":"pw","keepaliveSeconds":30}}"#)
        try #require(try spin(loop) { browser.frames.contains { $0.command == .loginAck } })

        var handshakesOpenAtStop: Int?
        node.stop { handshakesOpenAtStop = web.webSocket.connectionCount }
        try #require(try spin(loop) { handshakesOpenAtStop != nil && browser.closeInfo != nil }, "\(browser.diagnosis)")
        #expect(handshakesOpenAtStop == 0, "the node called itself stopped with a close handshake still under way")
        #expect(browser.lastError?.code == .shuttingDown, "\(browser.messages)")
        let closed = try #require(browser.closeInfo)
        #expect(closed.code == .goingAway && closed.initiatedByPeer && closed.wasClean, "\(closed)")
    }
}
