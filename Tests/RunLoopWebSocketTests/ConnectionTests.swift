import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// Client and server over real sockets on 127.0.0.1.
@Suite struct ConnectionTests {
    @Test func clientAndServerExchangeMessagesPingsAndACleanClose() async throws {
        struct Outcome: Sendable {
            var echoed: [WebSocketMessage] = []
            var pong: [UInt8]?
            var client: WebSocketCloseInfo?
            var server: WebSocketCloseInfo?
            var request: String?
        }
        let outcome = try await onLoopThread {
            let loop = RunLoop.current
            var outcome = Outcome()
            let server = try echoServer { outcome.server = $0 }
            server.onConnection = { [onConnection = server.onConnection] server, connection in
                outcome.request = connection.upgradeRequest?.target
                onConnection?(server, connection)
            }
            let client = WebSocketConnection()
            client.onOpen = { client in
                try? client.send(text: "héllo")
                try? client.send(binary: Array(0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
                try? client.ping([7, 7])
            }
            client.onMessage = { client, message in
                outcome.echoed.append(message)
                if outcome.echoed.count == 2 { client.close(code: .goingAway, reason: "done") }
            }
            client.onPong = { _, payload in outcome.pong = payload }
            client.onClose = { _, info in outcome.client = info }
            client.connect(host: "127.0.0.1", port: server.port, target: "/chat?x=1")
            try spin(loop) { outcome.client != nil && outcome.server != nil }
            return outcome
        }
        #expect(outcome.request == "/chat?x=1")
        #expect(outcome.echoed.first == .text("héllo"))
        #expect(outcome.echoed.last == .binary(Array(0..<100_000).map { UInt8(truncatingIfNeeded: $0) }))
        #expect(outcome.pong == [7, 7])
        #expect(outcome.client?.code == .goingAway)
        #expect(outcome.client?.reason == "done")
        #expect(outcome.client?.wasClean == true)
        #expect(outcome.client?.initiatedByPeer == false)
        #expect(outcome.server?.code == .goingAway)
        #expect(outcome.server?.initiatedByPeer == true)
        #expect(outcome.server?.wasClean == true)
    }

    @Test func serverInitiatedCloseCarriesCodeAndReasonToTheClient() async throws {
        let (client, server) = try await onLoopThread {
            let loop = RunLoop.current
            var client: WebSocketCloseInfo?
            var server: WebSocketCloseInfo?
            let listener = WebSocketServer()
            listener.onConnection = { _, connection in
                connection.onClose = { _, info in server = info }
                connection.close(code: WebSocketCloseCode(4001), reason: "bye")
            }
            try listener.listen()
            let connection = WebSocketConnection()
            connection.onClose = { _, info in client = info }
            connection.connect(host: "127.0.0.1", port: listener.port)
            try spin(loop) { client != nil && server != nil }
            return (client, server)
        }
        #expect(client?.code == WebSocketCloseCode(4001))
        #expect(client?.reason == "bye")
        #expect(client?.initiatedByPeer == true)
        #expect(client?.wasClean == true)
        #expect(server?.wasClean == true)
    }

    @Test func serverFramesAreUnmaskedAndPingsAreAnsweredWithTheSamePayload() async throws {
        let (frames, parseError) = try await onLoopThread {
            let loop = RunLoop.current
            let server = try echoServer()
            let peer = RawPeer(port: server.port)
            try spin(loop) { peer.head != nil }
            peer.send(WebSocketFrame(opcode: .ping, payload: Array("are you there".utf8)))
            peer.send(WebSocketFrame(opcode: .text, payload: Array("hi".utf8)))
            try spin(loop) { peer.frames.count >= 2 || peer.parseError != nil }
            return (peer.frames, peer.parseError)
        }
        // The raw peer parses as a client would: a masked server frame would be a parse error.
        #expect(parseError == nil)
        #expect(frames.first == WebSocketFrame(opcode: .pong, payload: Array("are you there".utf8)))
        #expect(frames.dropFirst().first == WebSocketFrame(opcode: .text, payload: Array("hi".utf8)))
    }

    @Test func clientFramesAreMasked() async throws {
        let (frames, error) = try await onLoopThread {
            let loop = RunLoop.current
            // A hand-written server: answers the upgrade, then parses what the client sends as a server must.
            let listener = TCPListener()
            var parser = WebSocketFrameParser(sender: .client, maximumFrameSize: 1024)
            var frames: [WebSocketFrame] = []
            var error: WebSocketError?
            listener.onAccept = { _, tcp in
                tcp.read(upTo: [13, 10, 13, 10]) { tcp, head in
                    guard case .success(let request) = WebSocketHandshake.validateRequest(head) else { return tcp.close() }
                    try? tcp.write(WebSocketHandshake.acceptResponse(for: request))
                    tcp.onData = { _, bytes in
                        parser.append(bytes)
                        do throws(WebSocketError) { while let frame = try parser.nextFrame() { frames.append(frame) } } catch let failure {
                            error = failure
                        }
                    }
                }
            }
            try listener.listen()
            let client = WebSocketConnection()
            client.onOpen = { client in try? client.send(text: "masked") }
            client.connect(host: "127.0.0.1", port: listener.port)
            try spin(loop) { !frames.isEmpty || error != nil }
            client.abort()
            return (frames, error)
        }
        #expect(error == nil)
        #expect(frames == [WebSocketFrame(opcode: .text, payload: Array("masked".utf8))])
    }

    @Test func aPeerThatNeverAnswersTheCloseIsDroppedAfterTheCloseTimeout() async throws {
        let (info, elapsed) = try await onManualClockLoop { loop, _ in
            let configuration = WebSocketConfiguration(closeTimeout: .seconds(3))
            let server = WebSocketServer(configuration: configuration)
            var info: WebSocketCloseInfo?
            server.onConnection = { _, connection in
                connection.onClose = { _, closed in info = closed }
                connection.close(code: .normalClosure)
            }
            try server.listen()
            // A raw peer that reads the close frame and never answers.
            let peer = RawPeer(port: server.port)
            try spin(loop, for: .seconds(1)) { peer.closeCode != nil }
            let start = loop.now
            try spin(loop, for: .seconds(60)) { info != nil }
            return (info, loop.now - start)
        }
        #expect(info?.error == .closeTimedOut)
        #expect(info?.wasClean == false)
        #expect(info?.transport == .aborted)
        #expect(elapsed <= .seconds(3))
        #expect(elapsed >= .seconds(2))
    }

    @Test func handshakeRefusalEndsTheClientWithTheReason() async throws {
        let info = try await onLoopThread {
            let loop = RunLoop.current
            let server = WebSocketServer()
            server.shouldAccept = { request in
                request.target == "/ws" ? nil : WebSocketHandshakeRefusal(status: 404, reason: "no such endpoint", extraFields: [])
            }
            try server.listen()
            var info: WebSocketCloseInfo?
            let client = WebSocketConnection()
            client.onOpen = { _ in Issue.record("opened despite the refusal") }
            client.onClose = { _, closed in info = closed }
            client.connect(host: "127.0.0.1", port: server.port, target: "/elsewhere")
            try spin(loop) { info != nil }
            return info
        }
        #expect(info?.code == .abnormalClosure)
        #expect(info?.error == .handshakeFailed("server answered 404 Not Found"))
    }
}
