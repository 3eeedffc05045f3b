import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

@Suite("IM client and the server's limits, over in-memory links (manual clock)")
struct ClientServerLimitsTests {
    @Test("a frame larger than the client's own limit but within the one LOGIN_ACK announced is read, even in the same read as the LOGIN_ACK")
    func announcedFrameLimitIsAccepted() async throws {
        try await onManualClockLoop { loop, _ in
            // A server with a 200 kB frame limit: it answers the login and, in the same write, delivers
            // a 100 kB message from the inbox.
            var held: [MemoryFrameLink] = []
            let links = MemoryLinkConnector { link in
                held.append(link)
                link.open(
                    IMFrameLinkEvents(
                        received: { [weak link] frame in
                            guard frame.command == .login else { return }
                            var response = IMLoginResponse()
                            response.limits.maxFrameBody = 200_000
                            response.limits.maxSendBody = 199_872
                            var message = IMChatMessage()
                            message.id = "big"
                            message.from = "bob"
                            message.user = "alice"
                            message.seq = 1
                            message.text = String(repeating: "x", count: 100_000)
                            // One send: the client end reads both frames in one read.
                            try? link?.send([
                                IMFrame(command: .loginAck, serial: frame.serial, message: response),
                                IMFrame(command: .deliver, serial: 1, message: message)
                            ])
                        }, failed: { _, _ in }, closed: { _ in }))
            }
            let client = IMClient(configuration: clientConfiguration("alice"), connector: links.connector)  // 64 KiB of its own
            let log = ClientRecorder()
            log.attach(to: client)
            client.start()
            try #require(try spin(loop) { log.messages.count == 1 || !log.disconnects.isEmpty })
            #expect(log.disconnects.isEmpty, "\(log.disconnects.map(\.1))")
            #expect(log.messages.first?.text.count == 100_000)
            #expect(client.maximumSendBody == 199_872)
            client.close()
            for link in held { link.abort() }
        }
    }

    @Test(
        "300 messages from one client through a server that rate-limits it arrive at another client in order, each once",
        .disabled(if: isRunningUnderThreadSanitizer, "a volume test of one loop: run in the plain pass"))
    func rateLimitedBurstKeepsOrder() async throws {
        try await onManualClockLoop { loop, _ in
            var settings = IMServer.Settings()
            settings.session.maximumMessagesPerSecond = 400
            settings.session.messageBurst = 20
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            let bob = makeClient(clientConfiguration("bob"), server: server)
            let bobLog = ClientRecorder()
            bobLog.attach(to: bob)
            bob.start()
            let alice = makeClient(clientConfiguration("alice"), server: server)
            let aliceLog = ClientRecorder()
            aliceLog.attach(to: alice)
            var pauses = 0
            alice.onRateLimited = { _, _ in pauses += 1 }
            alice.start()
            try #require(try spin(loop) { alice.state == .online && bob.state == .online })
            let texts = (1...300).map { "message \($0)" }
            for text in texts { try alice.send(text, to: .user("bob")) }
            try #require(
                try spin(loop, for: .seconds(20)) { bobLog.messages.count >= 300 && aliceLog.storedCount == 300 },
                "bob has \(bobLog.messages.count), alice settled \(aliceLog.storedCount)")
            #expect(pauses > 0, "the server refused some: the test exercised the pause")
            let arrived = bobLog.messages.map(\.text)
            let firstOutOfOrder = arrived.indices.first { $0 >= texts.count || arrived[$0] != texts[$0] }
            #expect(
                arrived.count == 300 && firstOutOfOrder == nil,
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
