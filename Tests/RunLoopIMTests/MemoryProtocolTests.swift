import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

/// The two-ended protocol cases of LoopbackTests that need no socket, on in-memory links and a
/// manual clock: exact virtual times instead of real-time bounds. LoopbackTests keeps what proves
/// the real sockets.
@Suite("IM over in-memory links (manual clock)")
struct MemoryProtocolTests {
    @Test("login, a direct message each way, exactly once, in order; offline delivery at the next login", arguments: StoreKind.allCases)
    func directMessagesAndOfflineDelivery(kind: StoreKind) async throws {
        try await onManualClockLoop { loop, clock in
            let store = try TestStore(kind)
            let bench = MemoryIMBench(loop: loop, clock: clock, store: store.server)
            let alice = bench.client(clientConfiguration("alice"))
            let aliceLog = ClientRecorder()
            aliceLog.attach(to: alice)
            try #require(try bench.runUntil { alice.state == .online })
            let ids = try (1...5).map { try alice.send("m\($0)", to: .user("bob")) }
            try #require(try bench.runUntil { aliceLog.storedCount == 5 })
            let bob = bench.client(clientConfiguration("bob"), start: false)
            let bobLog = ClientRecorder()
            bobLog.attach(to: bob)
            bob.start()
            try #require(try bench.runUntil { bobLog.messages.count == 5 })
            #expect(bobLog.messages.map(\.text) == ["m1", "m2", "m3", "m4", "m5"])
            #expect(bobLog.messages.map(\.id) == ids)
            #expect(bobLog.messages.allSatisfy { $0.from == "alice" && $0.seq > 0 })
            try bob.send("hi alice", to: .user("alice"))
            try #require(try bench.runUntil { aliceLog.messages.count == 1 })
            #expect(aliceLog.messages.first?.text == "hi alice")
            try #require(try bench.runUntil { (try? store.direct.undelivered(for: "bob"))?.isEmpty == true })
            #expect(aliceLog.deliveries[ids[0]] == [.queued, .sent(attempt: 1), .stored(seq: 1)])
            try bench.close()
            #expect(alice.state == .closed(.userClosed) && bob.state == .closed(.userClosed))
            #expect(bench.server.onlineUsers.isEmpty)
        }
    }

    @Test("a wrong password is refused clearly and never retried")
    func refusedLogin() async throws {
        try await onManualClockLoop { loop, clock in
            let bench = MemoryIMBench(loop: loop, clock: clock, store: InMemoryIMStore(accounts: ["alice": "right"]))
            let client = bench.client(clientConfiguration("alice", password: "wrong"), start: false)
            let log = ClientRecorder()
            log.attach(to: client)
            client.start()
            try #require(try bench.runUntil { if case .closed = client.state { return true } else { return false } })
            #expect(client.state == .closed(.loginRefused(.authenticationFailed, "unknown user or wrong password")))
            try bench.advance(by: .seconds(10))
            #expect(log.states.filter { if case .connecting = $0 { return true } else { return false } }.count == 1)
            #expect(bench.links.pairs.count == 1)
        }
    }

    @Test("a peer that keeps the link open but stops answering is detected at heartbeat + answer timeout")
    func silentPeerDetected() async throws {
        try await onManualClockLoop { loop, clock in
            let bench = MemoryIMBench(loop: loop, clock: clock)
            let client = bench.client(
                clientConfiguration("alice") {
                    $0.heartbeat = .fixed(.milliseconds(200))
                    $0.answerTimeout = .milliseconds(300)
                    $0.backoff = ReconnectBackoff.Policy(initialDelay: .seconds(10), maximumDelay: .seconds(10))
                }, start: false)
            let log = ClientRecorder()
            log.attach(to: client)
            client.start()
            try #require(try bench.runUntil { client.state == .online })
            // Half-open from here: the server is there, nothing reaches it or comes back.
            bench.links.lastPair?.apply(.drop)
            try #require(try bench.runUntil { !log.disconnects.isEmpty })
            #expect(log.disconnects.map(\.1) == [.answerTimeout(.milliseconds(300))])
            // The beat is due 200 ms after the last frame sent (the LOGIN, no round trip in memory),
            // the answer deadline 300 ms after the beat.
            #expect(log.disconnects[0].0 - log.onlineAt[0] == .milliseconds(500))
            try bench.advance(by: .seconds(5))
            #expect(log.disconnects.count == 1, "exactly one disconnect")
            client.close()
        }
    }

    @Test("a server that accepts and never answers the login: login timeout, then backoff and retry")
    func serverNeverAnswersLogin() async throws {
        try await onManualClockLoop { loop, _ in
            var accepted: [MemoryFrameLink] = []
            let links = MemoryLinkConnector { link in
                accepted.append(link)
                link.open(IMFrameLinkEvents(received: { _ in }, failed: { _, _ in }, closed: { _ in }))
            }
            let client = IMClient(
                configuration: clientConfiguration("alice") {
                    $0.loginTimeout = .milliseconds(200)
                    $0.answerTimeout = .seconds(10)
                }, connector: links.connector)
            let log = ClientRecorder()
            log.attach(to: client)
            let start = loop.now
            client.start()
            try #require(try loop.runUntil(timeout: .seconds(10)) { accepted.count >= 2 })
            #expect(log.disconnects.first?.1 == .loginTimeout)
            #expect(log.disconnects.first.map { $0.0 - start } == .milliseconds(200))
            #expect(log.states.contains { if case .reconnecting = $0 { return true } else { return false } })
            client.close()
        }
    }

    @Test("the server drops a client silent for 1.5 × its keepalive and marks it offline")
    func serverDropsSilentClient() async throws {
        try await onManualClockLoop { loop, _ in
            let server = IMServer(store: InMemoryIMStore())
            var presence: [(String, Bool, LoopInstant)] = []
            var ended: [IMSessionEndReason] = []
            server.onPresenceChange = { _, user, online in presence.append((user, online, loop.now)) }
            server.onSessionEnd = { _, _, reason in ended.append(reason) }
            // A client by hand: logs in announcing a 10 s keepalive, then never sends again.
            let mute = MemoryLinkPeer(loop: loop)
            server.adopt(mute.serverEnd)
            var login = IMLoginRequest()
            login.user = "mute"
            login.keepaliveSeconds = 10
            mute.send(IMFrame(command: .login, serial: 1, message: login))
            try #require(try loop.runUntil(timeout: .seconds(60)) { presence.count == 2 })
            try #require(presence.map(\.1) == [true, false])
            #expect(presence[1].2 - presence[0].2 == .seconds(15))
            #expect(ended == [.keepaliveExpired(silentFor: .seconds(15))])
            mute.settle()
            #expect(mute.received.map(\.command) == [.loginAck, .error] && mute.received[1].code == .keepaliveTimeout)
            #expect(mute.closeReason == .peerClosed)
            server.shutdown()
        }
    }

    @Test("no callback runs inside the owner's own call: send returns its id before .queued is reported")
    func callbacksAfterTheCall() async throws {
        try await onManualClockLoop { loop, clock in
            let bench = MemoryIMBench(loop: loop, clock: clock)
            let client = bench.client(clientConfiguration("alice"), start: false)
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
            try #require(try bench.runUntil { client.state == .online })
            inCall = true
            let id = try client.send("hi", to: .user("bob"))
            inCall = false
            #expect(calledInside == 0)
            #expect(states[id] == nil, "reported on the next pass")
            try #require(try bench.runUntil { states[id]?.last?.isFinal == true })
            #expect(states[id] == [.queued, .sent(attempt: 1), .stored(seq: 1)])
            inCall = true
            client.close()
            inCall = false
            #expect(calledInside == 0)
            try bench.runUntil { if case .closed = client.state { return true } else { return false } }
            bench.server.shutdown()
        }
    }
}
