import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// The real sockets under the IM stack: a whole exchange and bad input over loopback TCP. The other
/// two-ended protocol cases run on in-memory links (MemoryProtocolTests).
@Suite("IM over loopback TCP")
struct LoopbackTests {
    @Test("login, a direct message each way, exactly once, in order; offline delivery at the next login")
    func directMessagesAndOfflineDelivery() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let store = InMemoryIMStore()
            let server = IMServer(store: store)
            try server.listen()
            let alice = makeClient(clientConfiguration("alice"), port: server.port)
            let aliceLog = ClientRecorder()
            aliceLog.attach(to: alice)
            alice.start()
            try spin(loop) { alice.state == .online }
            // bob is offline: messages wait in his inbox.
            let ids = try (1...5).map { try alice.send("m\($0)", to: .user("bob")) }
            try spin(loop) { aliceLog.storedCount == 5 }
            let bob = makeClient(clientConfiguration("bob"), port: server.port)
            let bobLog = ClientRecorder()
            bobLog.attach(to: bob)
            bob.start()
            try spin(loop) { bobLog.messages.count == 5 }
            #expect(bobLog.messages.map(\.text) == ["m1", "m2", "m3", "m4", "m5"])
            #expect(bobLog.messages.map(\.id) == ids)
            #expect(bobLog.messages.allSatisfy { $0.from == "alice" && $0.seq > 0 })
            try bob.send("hi alice", to: .user("alice"))
            try spin(loop) { aliceLog.messages.count == 1 }
            #expect(aliceLog.messages.first?.text == "hi alice")
            // Acknowledged: bob's inbox is empty, so a reconnect brings nothing twice.
            try spin(loop) { (try? store.undelivered(for: "bob"))?.isEmpty == true }
            #expect(aliceLog.deliveries[ids[0]] == [.queued, .sent(attempt: 1), .stored(seq: 1)])
            alice.close()
            bob.close()
            try spin(loop) { alice.state == .closed(.userClosed) && bob.state == .closed(.userClosed) }
            try spin(loop) { server.onlineUsers.isEmpty }
            server.shutdown()
        }
    }

    @Test("bad input closes that one connection with the right code; the others carry on")
    func badInputIsolated() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            var settings = IMServer.Settings()
            settings.maximumFrameBody = 1024
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            try server.listen()
            let good = makeClient(clientConfiguration("good"), port: server.port)
            good.start()
            try spin(loop) { good.state == .online }
            let cases: [(String, [UInt8], IMStatusCode)] = [
                ("oversized", IMFrame(command: .login, serial: 1, body: [UInt8](repeating: 1, count: 2000)).encoded(), .frameTooLarge),
                ("version 9", IMFrame(rawCommand: 3, serial: 1, version: 9).encoded(), .unsupportedVersion),
                ("garbage body", IMFrame(command: .login, serial: 1, body: [0xFF, 0xFF, 0xFF]).encoded(), .badRequest),
                ("send before login", IMFrame(command: .send, serial: 1, message: IMChatMessage()).encoded(), .notLoggedIn),
                ("unknown command", IMFrame(rawCommand: 4242, serial: 1).encoded(), .unknownCommand)
            ]
            for (name, bytes, expected) in cases {
                let raw = TCPConnection()
                var frames: [IMFrame] = []
                var decoder = FrameDecoder()
                var closed: CloseReason?
                raw.onConnect = { connection in try? connection.write(bytes) }
                raw.onData = { _, chunk in
                    decoder.append(chunk)
                    while let frame = try? decoder.next() { frames.append(frame) }
                }
                raw.onClose = { _, reason in closed = reason }
                raw.connect(to: .ipv4Loopback(port: server.port))
                try spin(loop) { closed != nil }
                #expect(frames.last?.command == .error && frames.last?.code == expected, "\(name): \(frames)")
                #expect(closed == .peerClosed, "\(name): \(String(describing: closed))")
            }
            let id = try good.send("still here", to: .user("good2"))
            var delivered = false
            good.onDelivery = { _, messageID, state in if messageID == id, case .stored = state { delivered = true } }
            try spin(loop) { delivered }
            #expect(good.state == .online)
            good.close()
            server.shutdown()
        }
    }
}
