import RunLoopKit
import RunLoopNet
import RunLoopTesting
import RunLoopWebSocket
import Testing

/// Bad input closes that one connection with the right answer; a well-behaved connection on the same
/// server carries on.
@Suite struct BadInputTests {
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    static func request(
        dropping prefix: String? = nil, version: String = "13", method: String = "GET",
        extraLines: [String] = []
    ) -> [UInt8] {
        let lines =
            [
                "\(method) / HTTP/1.1", "Host: 127.0.0.1", "Upgrade: websocket", "Connection: Upgrade",
                "Sec-WebSocket-Key: \(key)", "Sec-WebSocket-Version: \(version)"
            ] + extraLines
        return Array((lines.filter { prefix == nil || !$0.hasPrefix(prefix!) }.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    struct Outcome: Sendable {
        var head: String?
        var closeCode: WebSocketCloseCode?
        var peerClosed: CloseReason?
        var serverInfo: WebSocketCloseInfo?
        var bystanderEchoes = 0
        var bystanderOpen = false
    }

    /// Runs `bad` against an echo server while a well-behaved client exchanges messages before and after.
    static func run(
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        request: [UInt8] = request(),
        awaitingServerError: Bool = false,
        _ bad: @escaping @Sendable (RawPeer) -> Void = { _ in }
    ) async throws -> Outcome {
        try await onLoopThread {
            let loop = RunLoop.current
            var outcome = Outcome()
            let server = try echoServer(configuration: configuration) { info in
                if info.error != nil { outcome.serverInfo = info }
            }
            let bystander = WebSocketConnection()
            bystander.onOpen = { client in try? client.send(text: "before") }
            bystander.onMessage = { _, _ in outcome.bystanderEchoes += 1 }
            bystander.connect(host: "127.0.0.1", port: server.port)
            try spin(loop) { outcome.bystanderEchoes == 1 }

            let peer = RawPeer(port: server.port, request: request)
            try spin(loop) { peer.head != nil || peer.closed != nil }
            bad(peer)
            try spin(loop) { peer.closed != nil }
            // The server reports its side once its close completes, which can come after the peer
            // saw the close frame (seen under parallel load): wait for it where a test checks it.
            if awaitingServerError { try spin(loop) { outcome.serverInfo != nil } }
            outcome.head = peer.head
            outcome.closeCode = peer.closeCode
            outcome.peerClosed = peer.closed

            try bystander.send(text: "after")
            try spin(loop) { outcome.bystanderEchoes == 2 }
            outcome.bystanderOpen = bystander.state == .open
            bystander.close()
            return outcome
        }
    }

    @Test func handshakeWithoutKeyIsRefusedWith400() async throws {
        let outcome = try await Self.run(request: Self.request(dropping: "Sec-WebSocket-Key"))
        #expect(outcome.head?.hasPrefix("HTTP/1.1 400 Bad Request\r\n") == true)
        #expect(outcome.bystanderEchoes == 2 && outcome.bystanderOpen)
    }

    @Test func handshakeWithWrongVersionIsRefusedWith426NamingVersion13() async throws {
        let outcome = try await Self.run(request: Self.request(version: "8"))
        #expect(outcome.head?.hasPrefix("HTTP/1.1 426 Upgrade Required\r\n") == true)
        #expect(outcome.head?.contains("\r\nSec-WebSocket-Version: 13\r\n") == true)
        #expect(outcome.bystanderEchoes == 2 && outcome.bystanderOpen)
    }

    @Test func nonGetAndMissingUpgradeAreRefused() async throws {
        let post = try await Self.run(request: Self.request(method: "POST"))
        #expect(post.head?.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n") == true)
        let plain = try await Self.run(request: Self.request(dropping: "Upgrade"))
        #expect(plain.head?.hasPrefix("HTTP/1.1 400 Bad Request\r\n") == true)
        #expect(plain.head?.contains("Connection: close") == true)
    }

    @Test func headOverTheLimitIsRefusedWith431() async throws {
        let padding = "X-Padding: " + String(repeating: "a", count: 9000)
        let outcome = try await Self.run(request: Self.request(extraLines: [padding]))
        #expect(outcome.head?.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n") == true)
        #expect(outcome.peerClosed == .peerClosed, "the answer arrives before a clean end, not a reset")
        #expect(outcome.bystanderEchoes == 2 && outcome.bystanderOpen)
    }

    @Test func headThatNeverEndsIsRefusedWith408() async throws {
        // Two lines and no blank line; also what a client sending bare LF line ends looks like.
        let configuration = WebSocketConfiguration(handshakeTimeout: .milliseconds(150))
        let outcome = try await Self.run(
            configuration: configuration,
            request: Array("GET / HTTP/1.1\nHost: 127.0.0.1\n\n".utf8))
        #expect(outcome.head?.hasPrefix("HTTP/1.1 408 Request Timeout\r\n") == true)
        #expect(outcome.peerClosed == .peerClosed)
        #expect(outcome.bystanderEchoes == 2 && outcome.bystanderOpen)
    }

    @Test func clientOverTheConnectionLimitGets503() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let server = try echoServer()
            server.listener.maximumConnections = 1
            var echoes = 0
            let holder = WebSocketConnection()
            holder.onOpen = { client in try? client.send(text: "hold") }
            holder.onMessage = { _, _ in echoes += 1 }
            holder.connect(host: "127.0.0.1", port: server.port)
            try spin(loop) { echoes == 1 }
            let peer = RawPeer(port: server.port)
            try spin(loop) { peer.closed != nil }
            #expect(peer.head?.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n") == true)
            #expect(peer.head?.contains("\r\nRetry-After: 5\r\n") == true)
            #expect(holder.state == .open)
            holder.close()
        }
    }

    @Test func unmaskedClientFrameClosesWith1002() async throws {
        let outcome = try await Self.run(awaitingServerError: true) {
            $0.send(WebSocketFrame(opcode: .text, payload: Array("x".utf8)), masked: false)
        }
        #expect(outcome.head?.hasPrefix("HTTP/1.1 101") == true)
        #expect(outcome.closeCode == .protocolError)
        #expect(outcome.serverInfo?.code == .protocolError)
        #expect(outcome.bystanderEchoes == 2 && outcome.bystanderOpen)
    }

    @Test func controlFrameOver125BytesClosesWith1002() async throws {
        let outcome = try await Self.run { $0.send(WebSocketFrame(opcode: .ping, payload: Array(repeating: 1, count: 126))) }
        #expect(outcome.closeCode == .protocolError)
        #expect(outcome.bystanderEchoes == 2 && outcome.bystanderOpen)
    }

    @Test func invalidUTF8ClosesWith1007EvenWhenSplitAcrossFragments() async throws {
        let whole = try await Self.run(awaitingServerError: true) { $0.send(WebSocketFrame(opcode: .text, payload: [0x41, 0xED, 0xA0, 0x80])) }
        #expect(whole.closeCode == .invalidPayload)
        #expect(whole.serverInfo?.error == .invalidUTF8)
        // Valid so far in the first fragment; the surrogate is only complete in the second.
        let split = try await Self.run { peer in
            peer.send(WebSocketFrame(fin: false, opcode: .text, payload: [0x41, 0xED]))
            peer.send(WebSocketFrame(opcode: .continuation, payload: [0xA0, 0x80]))
        }
        #expect(split.closeCode == .invalidPayload)
        #expect(split.bystanderEchoes == 2 && split.bystanderOpen)
    }

    @Test func messageOverTheLimitClosesWith1009() async throws {
        let configuration = WebSocketConfiguration(maximumFrameSize: 1000, maximumMessageSize: 1500)
        // Each fragment within the frame limit; together over the message limit.
        let outcome = try await Self.run(configuration: configuration, awaitingServerError: true) { peer in
            peer.send(WebSocketFrame(fin: false, opcode: .binary, payload: Array(repeating: 0, count: 1000)))
            peer.send(WebSocketFrame(opcode: .continuation, payload: Array(repeating: 0, count: 1000)))
        }
        #expect(outcome.closeCode == .messageTooBig)
        #expect(outcome.serverInfo?.error == .messageTooLarge(limit: 1500))
        let frame = try await Self.run(configuration: configuration) { peer in
            peer.send(WebSocketFrame(opcode: .binary, payload: Array(repeating: 0, count: 1001)))
        }
        #expect(frame.closeCode == .messageTooBig)
        #expect(frame.bystanderEchoes == 2 && frame.bystanderOpen)
    }
}
