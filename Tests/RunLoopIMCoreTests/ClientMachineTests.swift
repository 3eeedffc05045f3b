import RunLoopKit
import Testing

@testable import RunLoopIMCore

/// Drives an ``IMClientMachine`` on virtual time: no loop, no sockets, no sleeping.
struct ClientHarness {
    var machine: IMClientMachine
    var now = LoopInstant(nanoseconds: 1_000_000_000_000)
    var log: [IMClientAction] = []
    var generation: UInt64 = 0

    init(_ tweak: (inout IMClientConfiguration) -> Void = { _ in }) {
        var configuration = IMClientConfiguration(user: "alice", password: "pw")
        configuration.heartbeat = .fixed(.seconds(30))
        configuration.answerTimeout = .seconds(5)
        configuration.jitter = .seeded(42)
        tweak(&configuration)
        machine = IMClientMachine(configuration: configuration)
    }

    mutating func record(_ actions: [IMClientAction]) {
        log += actions
        for case .openTransport(let opened) in actions { generation = opened }
    }

    /// Jumps to the machine's next deadline (if it is before `limit`) and fires it.
    @discardableResult
    mutating func fireNext(before limit: LoopInstant = .distantFuture) -> Bool {
        guard let deadline = machine.nextDeadline, deadline <= limit else { return false }
        now = max(now, deadline)
        record(machine.timerFired(now: now))
        return true
    }

    mutating func advance(by duration: Duration) {
        let end = now + duration
        while fireNext(before: end) {}
        now = end
        record(machine.timerFired(now: now))
    }

    /// Start, open, and answer the login.
    mutating func goOnline() {
        record(machine.start(now: now))
        openAndLogin()
    }

    mutating func openAndLogin() {
        record(machine.transportOpened(generation: generation, now: now))
        let login = lastWritten(.login)!
        record(machine.frameReceived(IMFrame(command: .loginAck, serial: login.serial, message: IMLoginResponse()), generation: generation, now: now))
    }

    /// One frame in a read of its own (the DELIVER_ACK for it, if any, follows at once).
    mutating func receive(_ frame: IMFrame) {
        record(machine.frameReceived(frame, generation: generation, now: now))
        record(machine.endOfInput(generation: generation, now: now))
    }

    func written(_ command: IMCommand) -> [IMFrame] {
        log.compactMap { if case .write(let frame) = $0, frame.command == command { return frame } else { return nil } }
    }

    func lastWritten(_ command: IMCommand) -> IMFrame? { written(command).last }

    var disconnects: [IMDisconnectReason] {
        log.compactMap { if case .disconnected(let reason) = $0 { return reason } else { return nil } }
    }

    var opens: Int { log.filter { if case .openTransport = $0 { return true } else { return false } }.count }

    func deliveries(of id: String) -> [IMDeliveryState] {
        log.compactMap { if case .deliveryChanged(id, let state) = $0 { return state } else { return nil } }
    }

    var received: [IMMessage] {
        log.compactMap { if case .received(let message) = $0 { return message } else { return nil } }
    }

    mutating func ackAll() {
        for frame in written(.send) {
            let message = try! frame.decode(IMChatMessage.self)
            var ack = IMSendAck()
            ack.id = message.id
            ack.seq = 7
            receive(IMFrame(command: .sendAck, serial: frame.serial, message: ack))
        }
    }
}

@Suite("Client protocol machine")
struct ClientMachineTests {
    @Test("connect, log in with the announced keepalive, go online")
    func login() throws {
        var harness = ClientHarness()
        harness.goOnline()
        #expect(harness.machine.state == .online)
        let request = try #require(harness.lastWritten(.login)).decode(IMLoginRequest.self)
        #expect(request.user == "alice" && request.keepaliveSeconds == 30)
        #expect(harness.machine.nextDeadline == harness.now + .seconds(30), "only the heartbeat is timed")
        #expect(harness.machine.deadlineInPlace() == harness.machine.nextDeadline)
    }

    @Test("no heartbeat while traffic flows; one after the link has been quiet for the interval")
    func heartbeatOnlyWhenIdle() throws {
        var harness = ClientHarness()
        harness.goOnline()
        for _ in 0..<120 {  // an hour of a message from the server every 29 s
            harness.advance(by: .seconds(29))
            var message = IMChatMessage()
            message.id = UUIDText.random()
            message.from = "bob"
            harness.receive(IMFrame(command: .deliver, serial: 1, message: message))
        }
        #expect(harness.written(.heartbeat).isEmpty)
        harness.advance(by: .seconds(30))
        #expect(harness.written(.heartbeat).count == 1)
    }

    @Test("a half-open peer is detected within interval + answer timeout, with one disconnect")
    func halfOpenPeer() {
        var harness = ClientHarness()
        harness.goOnline()
        let start = harness.now
        while harness.disconnects.isEmpty { let fired = harness.fireNext(); #expect(fired); if !fired { break } }
        #expect(harness.now - start == .seconds(35))
        #expect(harness.disconnects == [.answerTimeout(.seconds(5))])
        #expect(harness.log.contains(.closeTransport(generation: 1, graceful: false)))
        if case .reconnecting = harness.machine.state {} else { Issue.record("expected reconnecting, got \(harness.machine.state)") }
    }

    @Test("answered heartbeats keep the connection for hours, one per interval")
    func answeredHeartbeats() {
        var harness = ClientHarness()
        harness.goOnline()
        for _ in 0..<240 {
            harness.advance(by: .seconds(30))
            if let beat = harness.lastWritten(.heartbeat) {
                harness.receive(IMFrame(command: .heartbeatAck, serial: beat.serial))
            }
        }
        #expect(harness.disconnects.isEmpty)
        #expect(harness.written(.heartbeat).count == 240)
    }

    @Test("frames from the server alone do not hold the heartbeat back: the server counts what it receives")
    func receivingIsNotSending() {
        var harness = ClientHarness()
        harness.goOnline()
        var notice = IMPresenceNotice()
        notice.user = "someone"
        for _ in 0..<10 {  // a presence notice every 10 s, which needs no answer
            harness.advance(by: .seconds(10))
            harness.receive(IMFrame(command: .presence, serial: 0, message: notice))
            if let beat = harness.lastWritten(.heartbeat) { harness.receive(IMFrame(command: .heartbeatAck, serial: beat.serial)) }
        }
        #expect(harness.written(.heartbeat).count == 3, "a beat every 30 s of sending nothing")
        #expect(harness.disconnects.isEmpty)
    }

    @Test("the keepalive the server grants, if shorter, paces the heartbeat")
    func grantedKeepalive() throws {
        var harness = ClientHarness()
        harness.record(harness.machine.start(now: harness.now))
        harness.record(harness.machine.transportOpened(generation: harness.generation, now: harness.now))
        var response = IMLoginResponse()
        response.keepaliveSeconds = 12
        harness.receive(IMFrame(command: .loginAck, serial: try #require(harness.lastWritten(.login)).serial, message: response))
        #expect(harness.machine.nextDeadline == harness.now + .seconds(12))
    }

    @Test("backoff: exponential within its jitter bounds, capped, reset by a session that stayed online")
    func backoffSchedule() {
        var harness = ClientHarness {
            $0.backoff = ReconnectBackoff.Policy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(16), jitter: 0.5)
            $0.stableSessionTime = .seconds(10)
        }
        harness.record(harness.machine.start(now: harness.now))
        var delays: [Duration] = []
        for _ in 0..<8 {
            harness.record(harness.machine.transportClosed(generation: harness.generation, reason: .failed(.refused), now: harness.now))
            guard case .reconnecting(let delay, _) = harness.machine.state else { Issue.record("not reconnecting"); return }
            delays.append(delay)
            let fired = harness.fireNext()
            #expect(fired)
        }
        let ceilings: [Double] = [1, 2, 4, 8, 16, 16, 16, 16]
        for (delay, ceiling) in zip(delays, ceilings) {
            #expect(delay.secondsDouble <= ceiling && delay.secondsDouble >= ceiling / 2, "\(delay) for ceiling \(ceiling)")
        }
        #expect(Set(delays).count > 4, "jitter spreads the waits")
        #expect(harness.disconnects.isEmpty, "failed attempts are not disconnects")
        harness.openAndLogin()
        harness.advance(by: .seconds(10))
        harness.record(harness.machine.transportClosed(generation: harness.generation, reason: .peerClosed, now: harness.now))
        guard case .reconnecting(let delay, let attempt) = harness.machine.state else { Issue.record("not reconnecting"); return }
        #expect(attempt == 1 && delay <= .seconds(1))
    }

    @Test("bounded attempts end in closed(gaveUp) and fail what was never sent")
    func boundedAttempts() throws {
        var harness = ClientHarness { $0.backoff = ReconnectBackoff.Policy(maximumAttempts: 2) }
        harness.record(harness.machine.start(now: harness.now))
        let (id, actions) = try harness.machine.send(text: "hi", to: .user("bob"), now: harness.now)
        harness.record(actions)
        for _ in 0..<3 {
            harness.record(harness.machine.transportClosed(generation: harness.generation, reason: .failed(.refused), now: harness.now))
            harness.fireNext()
        }
        #expect(harness.machine.state == .closed(.gaveUp(attempts: 2, last: .transport(.failed(.refused)))))
        #expect(harness.deliveries(of: id) == [.queued, .failed(.clientClosed)])
        #expect(harness.opens == 3)
    }

    @Test("a refused certificate ends the client at once, naming the check; a reset is retried")
    func certificateRefusalIsFinal() throws {
        let problem = TLSCertificateProblem(kind: .wrongHostName, code: 62, detail: "hostname mismatch")
        var harness = ClientHarness()
        harness.record(harness.machine.start(now: harness.now))
        let (id, actions) = try harness.machine.send(text: "hi", to: .user("bob"), now: harness.now)
        harness.record(actions)
        let refused = IMLinkCloseReason.failed(.certificateRejected(problem))
        harness.record(harness.machine.transportClosed(generation: harness.generation, reason: refused, now: harness.now))
        #expect(harness.machine.state == .closed(.secureConnectionFailed(.certificateRejected(problem))))
        #expect(harness.machine.lastFailure == .transport(refused))
        #expect(harness.machine.nextDeadline == nil)
        harness.advance(by: .seconds(3600))
        #expect(harness.opens == 1)
        #expect(harness.deliveries(of: id) == [.queued, .failed(.clientClosed)])

        var retried = ClientHarness()
        retried.record(retried.machine.start(now: retried.now))
        retried.record(retried.machine.transportClosed(generation: retried.generation, reason: .failed(.reset), now: retried.now))
        guard case .reconnecting = retried.machine.state else { Issue.record("not reconnecting: \(retried.machine.state)"); return }
    }

    @Test("a final failure after LOGIN went out ends the client too")
    func tlsAnswerAfterLoginIsFinal() {
        var harness = ClientHarness()
        harness.record(harness.machine.start(now: harness.now))
        harness.record(harness.machine.transportOpened(generation: harness.generation, now: harness.now))
        let failure = IMLinkFailure.certificateRejected(TLSCertificateProblem(kind: .expired, code: 10, detail: "certificate has expired"))
        harness.record(harness.machine.transportClosed(generation: harness.generation, reason: .failed(failure), now: harness.now))
        #expect(harness.machine.state == .closed(.secureConnectionFailed(failure)))
        harness.advance(by: .seconds(3600))
        #expect(harness.opens == 1)
    }

    @Test("a port that does not speak TLS ends the client too")
    func handshakeFailureIsFinal() {
        var harness = ClientHarness()
        harness.record(harness.machine.start(now: harness.now))
        let failure = IMLinkFailure.handshakeFailed("the peer does not speak TLS: wrong version number")
        harness.record(harness.machine.transportClosed(generation: harness.generation, reason: .failed(failure), now: harness.now))
        #expect(harness.machine.state == .closed(.secureConnectionFailed(failure)))
        #expect(
            IMClosedReason.secureConnectionFailed(failure).description == "no secure connection: the peer does not speak TLS: wrong version number")
    }

    @Test("no reconnect after a user close; closing settles and logs out")
    func noReconnectAfterClose() {
        var harness = ClientHarness()
        harness.goOnline()
        harness.record(harness.machine.close(now: harness.now))
        #expect(harness.machine.state == .closing)
        let logout = harness.lastWritten(.logout)!
        harness.receive(IMFrame(command: .logoutAck, serial: logout.serial))
        #expect(harness.machine.state == .closed(.userClosed))
        #expect(harness.disconnects == [.userClosed])
        harness.record(harness.machine.transportClosed(generation: harness.generation, reason: .peerClosed, now: harness.now))
        harness.advance(by: .seconds(3600))
        #expect(harness.opens == 1)
        #expect(harness.machine.nextDeadline == nil)
    }

    @Test("a late close callback from an old transport starts nothing")
    func staleCloseIgnored() {
        var harness = ClientHarness()
        harness.goOnline()
        let old = harness.generation
        harness.advance(by: .seconds(36))  // ping-pong kills generation 1 at 35 s; the reconnect starts within 0.5 s
        #expect(harness.disconnects.count == 1)
        harness.openAndLogin()
        #expect(harness.generation == old + 1 && harness.machine.state == .online)
        let before = harness.log.count
        harness.record(harness.machine.transportClosed(generation: old, reason: .failed(.reset), now: harness.now))
        harness.record(harness.machine.frameReceived(IMFrame(command: .heartbeatAck, serial: 1), generation: old, now: harness.now))
        #expect(harness.log.count == before, "nothing happens for generation \(old)")
        #expect(harness.machine.state == .online && harness.opens == 2 && harness.disconnects.count == 1)
    }

    @Test("a send while disconnected is queued and flushed in order after login")
    func queuedWhileOffline() throws {
        var harness = ClientHarness()
        harness.record(harness.machine.start(now: harness.now))
        var ids: [String] = []
        for text in ["one", "two", "three"] {
            let (id, actions) = try harness.machine.send(text: text, to: .room("lobby"), now: harness.now)
            ids.append(id)
            harness.record(actions)
        }
        #expect(harness.written(.send).isEmpty)
        harness.openAndLogin()
        let sent = try harness.written(.send).map { try $0.decode(IMChatMessage.self) }
        #expect(sent.map(\.id) == ids && sent.map(\.text) == ["one", "two", "three"])
        #expect(harness.deliveries(of: ids[0]) == [.queued, .sent(attempt: 1)])
    }

    @Test("the outbox is bounded with a clear error")
    func outboxLimit() throws {
        var harness = ClientHarness { $0.outboxLimit = 2 }
        _ = try harness.machine.send(text: "a", to: .user("b"), now: harness.now)
        _ = try harness.machine.send(text: "b", to: .user("b"), id: "fixed", now: harness.now)
        var machine = harness.machine
        let now = harness.now
        #expect(throws: IMClientError.outboxFull(limit: 2)) { try machine.send(text: "c", to: .user("b"), now: now) }
    }

    @Test("resend on ack timeout, then abandon; the server's verdict settles it exactly once")
    func resendThenGiveUp() throws {
        var harness = ClientHarness {
            $0.ackTimeout = .seconds(10)
            $0.answerTimeout = .seconds(60)  // the link stays alive: only the acks are missing
            $0.maximumSendAttempts = 3
        }
        harness.goOnline()
        let (lost, a1) = try harness.machine.send(text: "lost", to: .user("bob"), now: harness.now)
        harness.record(a1)
        let (stored, a2) = try harness.machine.send(text: "stored", to: .user("bob"), now: harness.now)
        harness.record(a2)
        harness.advance(by: .seconds(10))
        #expect(harness.written(.send).count == 4, "both resent once")
        harness.advance(by: .seconds(10))
        #expect(harness.written(.send).count == 6)
        harness.advance(by: .seconds(10))
        let abandon = try #require(harness.lastWritten(.abandon))
        #expect(try abandon.decode(IMAbandonRequest.self).ids == [lost, stored])
        var response = IMAbandonResponse()
        var first = IMAbandonResult()
        first.id = lost
        var second = IMAbandonResult()
        second.id = stored
        second.accepted = true
        second.seq = 99
        response.results = [first, second]
        harness.receive(IMFrame(command: .abandonAck, serial: abandon.serial, message: response))
        #expect(
            harness.deliveries(of: lost) == [.queued, .sent(attempt: 1), .sent(attempt: 2), .sent(attempt: 3), .failed(.notAcknowledged(attempts: 3))]
        )
        #expect(harness.deliveries(of: stored).last == .stored(seq: 99))
        var lateAck = IMSendAck()
        lateAck.id = stored
        lateAck.seq = 99
        harness.receive(IMFrame(command: .sendAck, serial: 1, message: lateAck))
        #expect(harness.deliveries(of: stored).filter(\.isFinal).count == 1, "a late ack settles nothing twice")
        #expect(harness.machine.unsettledMessages.isEmpty)
    }

    @Test("unacknowledged messages go out again, same id, after a reconnect")
    func resendAfterReconnect() throws {
        var harness = ClientHarness()
        harness.goOnline()
        let (id, actions) = try harness.machine.send(text: "x", to: .user("bob"), now: harness.now)
        harness.record(actions)
        harness.record(harness.machine.transportClosed(generation: harness.generation, reason: .failed(.reset), now: harness.now))
        harness.fireNext()
        harness.openAndLogin()
        let sends = try harness.written(.send).map { try $0.decode(IMChatMessage.self).id }
        #expect(sends == [id, id])
        harness.ackAll()
        #expect(harness.deliveries(of: id).filter(\.isFinal) == [.stored(seq: 7)])
    }

    @Test("the receiver de-duplicates by (sender, id) and acknowledges duplicates")
    func deduplication() {
        var harness = ClientHarness()
        harness.goOnline()
        var message = IMChatMessage()
        message.id = "m-1"
        message.from = "bob"
        message.seq = 5
        harness.receive(IMFrame(command: .deliver, serial: 1, message: message))
        harness.receive(IMFrame(command: .deliver, serial: 2, message: message))
        var other = message
        other.from = "carol"
        harness.receive(IMFrame(command: .deliver, serial: 3, message: other))
        #expect(harness.received.map(\.from) == ["bob", "carol"])
        #expect(harness.written(.deliverAck).count == 3)
    }

    @Test("a refused login closes for good")
    func refusedLogin() {
        var harness = ClientHarness()
        harness.record(harness.machine.start(now: harness.now))
        harness.record(harness.machine.transportOpened(generation: 1, now: harness.now))
        let login = harness.lastWritten(.login)!
        var response = IMLoginResponse()
        response.reason = "wrong password"
        harness.receive(IMFrame(command: .loginAck, serial: login.serial, code: .authenticationFailed, message: response))
        #expect(harness.machine.state == .closed(.loginRefused(.authenticationFailed, "wrong password")))
        harness.advance(by: .seconds(3600))
        #expect(harness.opens == 1)
    }

    @Test(
        "a login refused for now (rate limited, too many connections, shutting down, internal error) is tried again after a backoff; the next one can succeed",
        arguments: [IMStatusCode.rateLimited, .tooManyConnections, .shuttingDown, .internalError])
    func temporarilyRefusedLogin(code: IMStatusCode) {
        var harness = ClientHarness()
        harness.record(harness.machine.start(now: harness.now))
        harness.record(harness.machine.transportOpened(generation: 1, now: harness.now))
        var response = IMLoginResponse()
        response.reason = "busy"
        harness.receive(IMFrame(command: .loginAck, serial: harness.lastWritten(.login)!.serial, code: code, message: response))
        #expect(harness.opens == 1)
        if case .closed = harness.machine.state { Issue.record("closed for good on \(code)") }
        let refusedAt = harness.now
        while harness.opens == 1, harness.fireNext(before: refusedAt + .seconds(60)) {}
        #expect(harness.opens == 2, "tried again after the backoff")
        #expect(harness.now > refusedAt, "not at once: after a backoff")
        harness.record(harness.machine.transportOpened(generation: 2, now: harness.now))
        harness.receive(IMFrame(command: .loginAck, serial: harness.lastWritten(.login)!.serial, message: IMLoginResponse()))
        #expect(harness.machine.state == .online)
    }

    @Test("a server that accepts and never answers the login: login timeout, then backoff")
    func silentLogin() {
        var harness = ClientHarness {
            $0.loginTimeout = .seconds(3); $0.answerTimeout = .seconds(10)
        }
        harness.record(harness.machine.start(now: harness.now))
        harness.record(harness.machine.transportOpened(generation: 1, now: harness.now))
        harness.fireNext()
        #expect(harness.disconnects == [.loginTimeout])
        if case .reconnecting = harness.machine.state {} else { Issue.record("\(harness.machine.state)") }
    }

    @Test("network down: drop, wait without attempts; back: connect at once")
    func networkDownAndBack() {
        var harness = ClientHarness()
        harness.goOnline()
        harness.record(harness.machine.networkChanged(reachable: false, reason: "no route to 10.0.0.1", now: harness.now))
        #expect(harness.disconnects == [.networkUnreachable("no route to 10.0.0.1")])
        #expect(harness.machine.state == .waitingForNetwork("no route to 10.0.0.1"))
        harness.advance(by: .seconds(3600))
        #expect(harness.opens == 1, "no attempts burnt while unreachable")
        harness.record(harness.machine.networkChanged(reachable: true, reason: "", now: harness.now))
        #expect(harness.opens == 2)
        #expect(harness.machine.state == .connecting(attempt: 1))
    }

    @Test("a server ping is answered at once with its serial")
    func serverPing() {
        var harness = ClientHarness()
        harness.goOnline()
        harness.receive(IMFrame(command: .heartbeat, serial: 77))
        #expect(harness.lastWritten(.heartbeatAck)?.serial == 77)
    }

    @Test("a malformed body from the server is a protocol error and one disconnect")
    func malformedBody() {
        var harness = ClientHarness()
        harness.goOnline()
        harness.receive(IMFrame(command: .deliver, serial: 1, body: [0xFF, 0xFF]))
        #expect(harness.disconnects.count == 1)
        if case .protocolError = harness.disconnects.first {} else { Issue.record("\(harness.disconnects)") }
    }
}

@Suite("Client protocol machine: application requests")
struct ClientRequestTests {
    @Test("a request is answered by serial; one still open when the connection drops is reported lost")
    func requestsAnsweredOrLost() throws {
        var harness = ClientHarness()
        var offline = harness.machine
        #expect(throws: IMClientError.notOnline) { try offline.request(.listRooms, body: [], now: harness.now) }
        harness.goOnline()
        let (first, a1) = try harness.machine.request(.listRooms, body: [], now: harness.now)
        harness.record(a1)
        let (second, a2) = try harness.machine.request(.join, body: [], now: harness.now)
        harness.record(a2)
        harness.receive(IMFrame(command: .roomList, serial: first, message: IMRoomList()))
        #expect(harness.log.contains { if case .response(first, _) = $0 { return true } else { return false } })
        harness.advance(by: .seconds(5))  // no answer to JOIN: the ping-pong deadline ends the connection
        #expect(harness.log.contains(.requestLost(serial: second, .answerTimeout(.seconds(5)))))
        harness.receive(IMFrame(command: .presence, serial: 0, message: IMPresenceNotice()))
        #expect(!harness.log.contains { if case .notice = $0 { return true } else { return false } }, "nothing from a dead connection")
    }
}

@Suite("Client protocol machine: acknowledgements")
struct ClientAckTests {
    @Test("one DELIVER_ACK for everything one read delivered, duplicates included")
    func batchedAcks() throws {
        var harness = ClientHarness()
        harness.goOnline()
        for seq in 1...5 {
            var message = IMChatMessage()
            message.id = "m\(seq % 4)"  // m1 comes twice
            message.from = "bob"
            message.seq = UInt64(seq)
            harness.record(
                harness.machine.frameReceived(
                    IMFrame(command: .deliver, serial: UInt32(seq), message: message),
                    generation: harness.generation, now: harness.now))
        }
        #expect(harness.written(.deliverAck).isEmpty, "not before the read is done")
        harness.record(harness.machine.endOfInput(generation: harness.generation, now: harness.now))
        let acks = harness.written(.deliverAck)
        #expect(acks.count == 1)
        #expect(try acks[0].decode(IMDeliverAck.self).seqs == [1, 2, 3, 4, 5])
        #expect(harness.received.count == 4 && harness.machine.duplicatesDropped == 1)
        harness.record(harness.machine.endOfInput(generation: harness.generation, now: harness.now))
        #expect(harness.written(.deliverAck).count == 1, "nothing new, no frame")
    }
}
