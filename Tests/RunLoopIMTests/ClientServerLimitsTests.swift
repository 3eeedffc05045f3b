import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing
@testable import RunLoopIM
@testable import RunLoopIMCore

@Suite("IM client and the server's limits, over loopback TCP")
struct ClientLimitsLoopbackTests {
    @Test("a frame larger than the client's own limit but within the one LOGIN_ACK announced is read, even in the same read as the LOGIN_ACK")
    func announcedFrameLimitIsAccepted() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            // A server with a 200 kB frame limit: it answers the login and, in the same write, delivers
            // a 100 kB message from the inbox.
            let listener = TCPListener()
            var held: [TCPConnection] = []
            listener.onAccept = { _, connection in
                held.append(connection)
                var decoder = FrameDecoder()
                connection.onData = { connection, bytes in
                    decoder.append(bytes)
                    while let frame = try? decoder.next() {
                        guard frame.command == .login else { continue }
                        var response = IMLoginResponse()
                        response.limits.maxFrameBody = 200_000
                        response.limits.maxSendBody = 199_872
                        var message = IMChatMessage()
                        message.id = "big"
                        message.from = "bob"
                        message.user = "alice"
                        message.seq = 1
                        message.text = String(repeating: "x", count: 100_000)
                        let bytes = IMFrame(command: .loginAck, serial: frame.serial, message: response).encoded()
                            + IMFrame(command: .deliver, serial: 1, message: message).encoded()
                        try? connection.write(bytes)
                    }
                }
            }
            try listener.listen()
            let client = makeClient(clientConfiguration("alice"), port: listener.port)  // 64 KiB of its own
            let log = ClientRecorder()
            log.attach(to: client)
            client.start()
            try #require(try spin(loop) { log.messages.count == 1 || !log.disconnects.isEmpty })
            #expect(log.disconnects.isEmpty, "\(log.disconnects.map(\.1))")
            #expect(log.messages.first?.text.count == 100_000)
            #expect(client.maximumSendBody == 199_872)
            client.close()
            listener.close()
            for connection in held { connection.close(immediately: true) }
        }
    }

    @Test("300 messages from one client through a server that rate-limits it arrive at another client in order, each once", .disabled(if: isRunningUnderThreadSanitizer, "a volume test of one loop: run in the plain pass"))
    func rateLimitedBurstKeepsOrder() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            var settings = IMServer.Settings()
            settings.session.maximumMessagesPerSecond = 400
            settings.session.messageBurst = 20
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            try server.listen()
            let bob = makeClient(clientConfiguration("bob"), port: server.port)
            let bobLog = ClientRecorder()
            bobLog.attach(to: bob)
            bob.start()
            let alice = makeClient(clientConfiguration("alice"), port: server.port)
            let aliceLog = ClientRecorder()
            aliceLog.attach(to: alice)
            var pauses = 0
            alice.onRateLimited = { _, _ in pauses += 1 }
            alice.start()
            try #require(try spin(loop) { alice.state == .online && bob.state == .online })
            let texts = (1...300).map { "message \($0)" }
            for text in texts { try alice.send(text, to: .user("bob")) }
            try #require(try spin(loop, for: .seconds(20)) { bobLog.messages.count >= 300 && aliceLog.storedCount == 300 },
                         "bob has \(bobLog.messages.count), alice settled \(aliceLog.storedCount)")
            #expect(pauses > 0, "the server refused some: the test exercised the pause")
            let arrived = bobLog.messages.map(\.text)
            let firstOutOfOrder = arrived.indices.first { $0 >= texts.count || arrived[$0] != texts[$0] }
            #expect(arrived.count == 300 && firstOutOfOrder == nil,
                    "\(arrived.count) arrived; from #\(firstOutOfOrder.map { $0 + 1 } ?? 0) on: \(arrived.dropFirst(firstOutOfOrder ?? 0).prefix(8))")
            #expect(aliceLog.failedCount == 0 && aliceLog.settledTwice.isEmpty)
            #expect(aliceLog.disconnects.isEmpty)
            alice.close()
            bob.close()
            try spin(loop) { alice.state == .closed(.userClosed) && bob.state == .closed(.userClosed) }
            server.shutdown()
        }
    }
}
