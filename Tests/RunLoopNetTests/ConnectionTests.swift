import Glibc
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// Connecting, echoing and closing over loopback (port 0), on the system clock.
@Suite struct ConnectionTests {
    struct EchoOutcome: Sendable {
        var echoed = ""
        var clientReason: CloseReason?
        var serverReason: CloseReason?
        var connectedOnLoopThread = false
        var remote: SocketAddress?
        var local: SocketAddress?
        /// The accepted end's own address while open, and after it closed; the client's after it closed.
        var acceptedLocal: SocketAddress?
        var acceptedLocalAfterClose: SocketAddress?
        var localAfterClose: SocketAddress?
        var listenerPort: UInt16 = 0
    }

    /// Client connects, sends, reads the echo, closes; the server sees the peer close.
    private func echoRoundTrip(listenOn host: String, connectTo target: String, resolver: any HostResolver = SystemResolver()) throws -> EchoOutcome {
        let loop = RunLoop.current
        var outcome = EchoOutcome()
        let listener = TCPListener()
        listener.onAccept = { _, connection in
            outcome.acceptedLocal = connection.localAddress
            connection.onData = { connection, bytes in try? connection.write(bytes) }
            connection.onClose = { connection, reason in
                outcome.serverReason = reason
                outcome.acceptedLocalAfterClose = connection.localAddress
            }
        }
        try listener.listen(host: host, port: 0)
        let client = TCPConnection()
        client.onConnect = { connection in
            outcome.connectedOnLoopThread = loop.isCurrentThread
            outcome.remote = connection.remoteAddress
            outcome.local = connection.localAddress
            try? connection.write(bytes("hello, loop"))
            connection.read(exactly: 11) { connection, reply in
                outcome.echoed = text(reply)
                connection.close()
            }
        }
        client.onClose = { connection, reason in
            outcome.clientReason = reason
            outcome.localAfterClose = connection.localAddress
        }
        outcome.listenerPort = listener.port
        client.connect(to: target, port: listener.port, timeout: .seconds(5), resolver: resolver)
        try spin(loop) { outcome.clientReason != nil && outcome.serverReason != nil }
        listener.close()
        return outcome
    }

    @Test func ipv4EchoRoundTripAndOrderlyClose() async throws {
        let outcome = try await onLoopThread { try echoRoundTrip(listenOn: "127.0.0.1", connectTo: "127.0.0.1") }
        #expect(outcome.echoed == "hello, loop")
        #expect(outcome.connectedOnLoopThread)
        #expect(outcome.clientReason == .closed)
        #expect(outcome.serverReason == .peerClosed)
        #expect(outcome.remote?.ip == "127.0.0.1")
        #expect(outcome.local?.family == .ipv4)
        // A connection that connected keeps its address; an accepted one asks its socket, while open.
        #expect(outcome.localAfterClose == outcome.local)
        #expect(outcome.acceptedLocal?.ip == "127.0.0.1" && outcome.acceptedLocal?.port == outcome.listenerPort)
        #expect(outcome.acceptedLocalAfterClose == nil)
    }

    @Test(.enabled(if: ipv6LoopbackAvailable, "::1 is not available"))
    func ipv6EchoRoundTrip() async throws {
        let outcome = try await onLoopThread { try echoRoundTrip(listenOn: "::1", connectTo: "::1") }
        #expect(outcome.echoed == "hello, loop")
        #expect(outcome.remote?.description.hasPrefix("[::1]:") == true)
        #expect(outcome.clientReason == .closed)
        #expect(outcome.serverReason == .peerClosed)
    }

    @Test func hostNameIsResolvedOffTheLoopThread() async throws {
        let (outcome, asked, answered) = try await onLoopThread {
            let resolver = RecordingResolver(loop: RunLoop.current)
            // "localhost" may resolve to ::1 first; the listener is IPv4 only, so that address is refused
            // and the next one is tried.
            let outcome = try echoRoundTrip(listenOn: "127.0.0.1", connectTo: "localhost", resolver: resolver)
            return (outcome, resolver.askedOnLoopThread.get(), resolver.answeredOnLoopThread.get())
        }
        #expect(outcome.echoed == "hello, loop")
        #expect(asked, "the resolver is started from the loop thread")
        #expect(!answered, "getaddrinfo runs on a worker thread")
    }

    @Test func resolutionFailureIsTyped() async throws {
        let reason = try await onLoopThread {
            let loop = RunLoop.current
            var reason: CloseReason?
            let client = TCPConnection()
            client.onClose = { _, why in reason = why }
            client.connect(to: "no-such-host.test", port: 1, resolver: FailingResolver())
            try spin(loop) { reason != nil }
            return reason
        }
        #expect(reason == .failed(.resolutionFailed(host: "no-such-host.test", reason: "no such host (test)")))
    }

    @Test func connectingToAClosedPortIsRefused() async throws {
        let (reason, connected) = try await onLoopThread {
            let loop = RunLoop.current
            let (fd, port) = boundPortWithoutListener()
            defer { close(fd) }
            var reason: CloseReason?
            var connected = false
            let client = TCPConnection()
            client.onConnect = { _ in connected = true }
            client.onClose = { _, why in reason = why }
            client.connect(to: "127.0.0.1", port: port)
            try spin(loop) { reason != nil }
            return (reason, connected)
        }
        #expect(reason == .failed(.connectionRefused))
        #expect(!connected)
    }

    @Test func peerCloseDeliversTheLastBytesThenPeerClosed() async throws {
        let (received, clientReason, serverReason) = try await onLoopThread {
            let loop = RunLoop.current
            var received: [UInt8] = []
            var clientReason: CloseReason?
            var serverReason: CloseReason?
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                try? connection.write(bytes("goodbye"))
                connection.close()
                connection.onClose = { _, why in serverReason = why }
            }
            try listener.listen()
            let client = TCPConnection()
            client.onData = { _, chunk in received += chunk }
            client.onClose = { _, why in clientReason = why }
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { clientReason != nil && serverReason != nil }
            return (text(received), clientReason, serverReason)
        }
        #expect(received == "goodbye")
        #expect(clientReason == .peerClosed)
        #expect(serverReason == .closed)
    }

    @Test func resetByPeerIsConnectionReset() async throws {
        let (clientReason, serverReason) = try await onLoopThread {
            let loop = RunLoop.current
            var clientReason: CloseReason?
            var serverReason: CloseReason?
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                connection.onData = { _, _ in }
                connection.onClose = { _, why in serverReason = why }
            }
            try listener.listen()
            let client = TCPConnection()
            client.onConnect = { connection in
                try? connection.write(bytes("x"))
                connection.close(immediately: true)
            }
            client.onClose = { _, why in clientReason = why }
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { clientReason != nil && serverReason != nil }
            return (clientReason, serverReason)
        }
        #expect(clientReason == .aborted)
        #expect(serverReason == .failed(.connectionReset))
    }

    @Test func halfCloseKeepsTheOtherDirectionOpen() async throws {
        struct Outcome: Sendable {
            var serverGot = ""
            var serverSawEndOfInput = false
            var clientGot = ""
            var writeAfterShutdown: NetError?
            var clientReason: CloseReason?
            var serverReason: CloseReason?
        }
        let outcome = try await onLoopThread {
            let loop = RunLoop.current
            var outcome = Outcome()
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                connection.allowsHalfClosure = true
                connection.onData = { _, chunk in outcome.serverGot += text(chunk) }
                connection.onInputClosed = { connection in
                    outcome.serverSawEndOfInput = true
                    // The peer is done sending, but still reading: answer, then close.
                    try? connection.write(bytes("pong:" + outcome.serverGot))
                    connection.close()
                }
                connection.onClose = { _, why in outcome.serverReason = why }
            }
            try listener.listen()
            let client = TCPConnection()
            client.onConnect = { connection in
                try? connection.write(bytes("ping"))
                connection.shutdownOutput()
                do throws(NetError) { try connection.write(bytes("late")) } catch { outcome.writeAfterShutdown = error }
            }
            client.onData = { _, chunk in outcome.clientGot += text(chunk) }
            client.onClose = { _, why in outcome.clientReason = why }
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { outcome.clientReason != nil && outcome.serverReason != nil }
            return outcome
        }
        #expect(outcome.serverGot == "ping")
        #expect(outcome.serverSawEndOfInput)
        #expect(outcome.clientGot == "pong:ping")
        #expect(outcome.writeAfterShutdown == .outputClosed)
        #expect(outcome.clientReason == .peerClosed)
        #expect(outcome.serverReason == .closed)
    }

    @Test func readHelpersFrameTheStream() async throws {
        let (lines, header, body, overflow, overflowCalls) = try await onLoopThread {
            let loop = RunLoop.current
            var overflowCalls = 0
            var lines: [String] = []
            var header: [UInt8] = []
            var body = ""
            var overflow: CloseReason?
            let listener = TCPListener()
            defer { listener.close() }
            var accepted = 0
            listener.onAccept = { _, connection in
                accepted += 1
                if accepted == 1 {
                    // Lines, then a length-prefixed frame, all from one write.
                    func nextLine(_ connection: TCPConnection) {
                        connection.read(upTo: bytes("\n")) { connection, line in
                            lines.append(text(line))
                            if lines.count < 3 { return nextLine(connection) }
                            connection.read(exactly: 2) { connection, prefix in
                                header = prefix
                                connection.read(exactly: Int(prefix[0]) << 8 | Int(prefix[1])) { _, payload in
                                    body = text(payload)
                                }
                            }
                        }
                    }
                    nextLine(connection)
                } else {
                    // A handler that leaves the connection open: it closes as without one.
                    connection.read(upTo: bytes("\r\n"), maximumLength: 8, onOverflow: { _ in overflowCalls += 1 }) { _, _ in }
                    connection.onClose = { _, why in overflow = why }
                }
            }
            try listener.listen()
            let framed = TCPConnection()
            framed.onConnect = { try? $0.write(bytes("a\nbb\nccc\n") + [0, 5] + bytes("hello")) }
            framed.connect(to: "127.0.0.1", port: listener.port)
            let chatty = TCPConnection()
            chatty.onConnect = { try? $0.write(bytes("0123456789abcdef\r\n")) }
            chatty.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { body == "hello" && overflow != nil }
            return (lines, header, body, overflow, overflowCalls)
        }
        #expect(lines == ["a\n", "bb\n", "ccc\n"])
        #expect(header == [0, 5])
        #expect(body == "hello")
        #expect(overflow == .failed(.delimiterNotFound(limit: 8)))
        #expect(overflowCalls == 1)
    }

    @Test func writesBeforeTheHandshakeAreSentAfterIt() async throws {
        let echoed = try await onLoopThread {
            let loop = RunLoop.current
            let listener = try echoListener()
            defer { listener.close() }
            var echoed = ""
            let client = TCPConnection()
            client.onData = { _, chunk in echoed += text(chunk) }
            client.connect(to: "127.0.0.1", port: listener.port)
            try client.write(bytes("queued early"))
            try spin(loop) { echoed.count >= 12 }
            client.close()
            return echoed
        }
        #expect(echoed == "queued early")
    }

    @Test func closeReportsOnTheNextPassNotInsideTheCall() async throws {
        let (insideCall, after, state) = try await onLoopThread {
            let loop = RunLoop.current
            let listener = try echoListener()
            defer { listener.close() }
            var reason: CloseReason?
            var connected = false
            let client = TCPConnection()
            client.onConnect = { _ in connected = true }
            client.onClose = { _, why in reason = why }
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { connected }
            client.close()
            let insideCall = reason
            try spin(loop) { reason != nil }
            return (insideCall, reason, client.state)
        }
        #expect(insideCall == nil)
        #expect(after == .closed)
        #expect(state == .closed)
    }
}
