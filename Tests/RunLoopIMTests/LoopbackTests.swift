import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing
@testable import RunLoopIM

@Suite("IM over loopback TCP")
struct LoopbackTests {
    @Test("login, a direct message each way, exactly once, in order; offline delivery at the next login")
    func directMessagesAndOfflineDelivery() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let server = IMServer(store: InMemoryIMStore())
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
            try spin(loop) { server.store.undelivered(for: "bob").isEmpty }
            #expect(aliceLog.deliveries[ids[0]] == [.queued, .sent(attempt: 1), .stored(seq: 1)])
            alice.close()
            bob.close()
            try spin(loop) { alice.state == .closed(.userClosed) && bob.state == .closed(.userClosed) }
            try spin(loop) { server.onlineUsers.isEmpty }
            server.shutdown()
        }
    }

    @Test("a wrong password is refused clearly and never retried")
    func refusedLogin() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let server = IMServer(store: InMemoryIMStore(accounts: ["alice": "right"]))
            try server.listen()
            let client = makeClient(clientConfiguration("alice", password: "wrong"), port: server.port)
            let log = ClientRecorder()
            log.attach(to: client)
            client.start()
            try spin(loop) { if case .closed = client.state { return true } else { return false } }
            #expect(client.state == .closed(.loginRefused(.authenticationFailed, "unknown user or wrong password")))
            try loop.run(.default, timeout: .milliseconds(200))
            #expect(log.states.filter { if case .connecting = $0 { return true } else { return false } }.count == 1)
            server.shutdown()
        }
    }

    @Test("a peer that keeps TCP open but stops answering is detected within heartbeat + answer timeout")
    func silentPeerDetected() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            // A server that answers the login and then says nothing more, holding the socket open.
            let listener = TCPListener()
            var held: [TCPConnection] = []
            listener.onAccept = { _, connection in
                held.append(connection)
                var decoder = FrameDecoder()
                connection.onData = { connection, bytes in
                    decoder.append(bytes)
                    while let frame = try? decoder.next() {
                        if frame.command == .login {
                            try? connection.write(IMFrame(command: .loginAck, serial: frame.serial, message: IMLoginResponse()).encoded())
                        }
                    }
                }
            }
            try listener.listen()
            let client = makeClient(clientConfiguration("alice") {
                $0.heartbeat = .fixed(.milliseconds(200))
                $0.answerTimeout = .milliseconds(300)
                $0.backoff = ReconnectBackoff.Policy(initialDelay: .seconds(10), maximumDelay: .seconds(10))
            }, port: listener.port)
            let log = ClientRecorder()
            log.attach(to: client)
            client.start()
            try spin(loop) { client.state == .online }
            try spin(loop) { !log.disconnects.isEmpty }
            let detected = log.disconnects[0].0 - log.onlineAt[0]
            #expect(log.disconnects.map(\.1) == [.answerTimeout(.milliseconds(300))])
            // The beat is due 200 ms after the last frame sent — the LOGIN, a round trip before
            // "online" — and the answer deadline 300 ms after the beat: ~500 ms, never over the bound.
            #expect(detected >= .milliseconds(400) && detected < .milliseconds(900), "detected after \(detected)")
            try loop.run(.default, timeout: .milliseconds(100))
            #expect(log.disconnects.count == 1, "exactly one disconnect")
            client.close()
            listener.close()
            for connection in held { connection.close(immediately: true) }
        }
    }

    @Test("a server that accepts and never answers the login: login timeout, then backoff and retry")
    func serverNeverAnswersLogin() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let listener = TCPListener()
            var accepted = 0
            listener.onAccept = { _, connection in
                accepted += 1
                connection.onData = { _, _ in }
            }
            try listener.listen()
            let client = makeClient(clientConfiguration("alice") {
                $0.loginTimeout = .milliseconds(200)
                $0.answerTimeout = .seconds(10)
            }, port: listener.port)
            let log = ClientRecorder()
            log.attach(to: client)
            client.start()
            try spin(loop) { accepted >= 2 }
            #expect(log.disconnects.first?.1 == .loginTimeout)
            #expect(log.states.contains { if case .reconnecting = $0 { return true } else { return false } })
            client.close()
            listener.close()
        }
    }

    @Test("the server drops a client silent for 1.5 × its keepalive and marks it offline")
    func serverDropsSilentClient() async throws {
        try await onManualClockLoop { loop, clock in
            let server = IMServer(store: InMemoryIMStore())
            var presence: [(String, Bool, LoopInstant)] = []
            var ended: [IMSessionEndReason] = []
            server.onPresenceChange = { _, user, online in presence.append((user, online, loop.now)) }
            server.onSessionEnd = { _, _, reason in ended.append(reason) }
            try server.listen()
            // A raw client: logs in announcing a 10 s keepalive, then never sends again.
            let raw = TCPConnection()
            var login = IMLoginRequest()
            login.user = "mute"
            login.keepaliveSeconds = 10
            raw.onConnect = { connection in try? connection.write(IMFrame(command: .login, serial: 1, message: login).encoded()) }
            var received: [IMFrame] = []
            var decoder = FrameDecoder()
            raw.onData = { _, bytes in
                decoder.append(bytes)
                while let frame = try? decoder.next() { received.append(frame) }
            }
            raw.connect(to: .ipv4Loopback(port: server.port))
            try spin(loop, for: .seconds(60)) { presence.count == 2 }
            try #require(presence.map(\.1) == [true, false])
            #expect(presence[1].2 - presence[0].2 == .seconds(15))
            #expect(ended == [.keepaliveExpired(silentFor: .seconds(15))])
            try spin(loop) { received.count == 2 }
            #expect(received.map(\.command) == [.loginAck, .error] && received[1].code == .keepaliveTimeout)
            _ = clock
            raw.close()
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
                ("unknown command", IMFrame(rawCommand: 4242, serial: 1).encoded(), .unknownCommand),
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

@Suite("IMClient callbacks")
struct ClientCallbackTests {
    @Test("no callback runs inside the owner's own call: send returns its id before .queued is reported")
    func callbacksAfterTheCall() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let server = IMServer(store: InMemoryIMStore())
            try server.listen()
            let client = makeClient(clientConfiguration("alice"), port: server.port)
            var inCall = false
            var calledInside = 0
            var states: [String: [IMDeliveryState]] = [:]
            client.onStateChange = { _, _ in if inCall { calledInside += 1 } }
            client.onDelivery = { _, id, state in
                if inCall { calledInside += 1 }
                states[id, default: []].append(state)
            }
            inCall = true
            client.start()
            inCall = false
            try #require(try spin(loop) { client.state == .online })
            inCall = true
            let id = try client.send("hi", to: .user("bob"))
            inCall = false
            #expect(calledInside == 0)
            #expect(states[id] == nil, "reported on the next pass")
            try #require(try spin(loop) { states[id]?.last?.isFinal == true })
            #expect(states[id] == [.queued, .sent(attempt: 1), .stored(seq: 1)])
            inCall = true
            client.close()
            inCall = false
            #expect(calledInside == 0)
            try spin(loop) { if case .closed = client.state { return true } else { return false } }
            server.shutdown()
        }
    }
}
