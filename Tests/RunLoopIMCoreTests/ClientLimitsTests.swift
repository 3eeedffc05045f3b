import RunLoopKit
import Testing

@testable import RunLoopIMCore

extension ClientHarness {
    /// Start, open, and answer the login with `response` (code 0).
    mutating func goOnline(answering response: IMLoginResponse) {
        record(machine.start(now: now))
        openAndLogin(answering: response)
    }

    mutating func openAndLogin(answering response: IMLoginResponse) {
        record(machine.transportOpened(generation: generation, now: now))
        let login = lastWritten(.login)!
        record(machine.frameReceived(IMFrame(command: .loginAck, serial: login.serial, message: response), generation: generation, now: now))
    }

    /// Sends `text` and records what it did; returns the id.
    @discardableResult
    mutating func send(_ text: String, to recipient: IMRecipient = .user("bob"), id: String? = nil) throws -> String {
        let (messageID, actions) = try machine.send(text: text, to: recipient, id: id, now: now)
        record(actions)
        return messageID
    }

    /// The ids of every SEND written so far, in order.
    var sentIDs: [String] { written(.send).map { try! $0.decode(IMChatMessage.self).id } }

    /// The SEND frames written for `id`.
    func sends(of id: String) -> [IMFrame] { written(.send).filter { (try? $0.decode(IMChatMessage.self).id) == id } }

    /// Answers the latest SEND of `id` with `code` (and `retryAfterMs`, `seq`).
    mutating func answerSend(of id: String, code: IMStatusCode, retryAfterMs: UInt32 = 0, seq: UInt64 = 0, echoID: Bool = true) {
        let frame = sends(of: id).last!
        var ack = IMSendAck()
        if echoID { ack.id = id }
        ack.seq = seq
        ack.retryAfterMs = retryAfterMs
        receive(IMFrame(command: .sendAck, serial: frame.serial, code: code, message: ack))
    }

    var rateLimitPauses: [Duration] {
        log.compactMap { if case .rateLimited(let wait) = $0 { return wait } else { return nil } }
    }

    /// Drops the connection (reset) and lets the reconnect timer open the next one.
    mutating func dropAndReopen() {
        record(machine.transportClosed(generation: generation, reason: .failed(.reset), now: now))
        let opens = self.opens
        while self.opens == opens, fireNext() {}
    }
}

func limits(send: UInt32, frame: UInt32) -> IMLoginResponse {
    var response = IMLoginResponse()
    response.limits.maxSendBody = send
    response.limits.maxFrameBody = frame
    response.limits.maxMessageIDBytes = 128
    return response
}

@Suite("Client protocol machine: the server's size limit")
struct ClientSizeLimitTests {
    @Test("before login the SEND body may be the frame limit less 128; a larger message is refused at once, naming the limit")
    func assumedLimit() throws {
        var harness = ClientHarness { $0.maximumFrameBody = 1_000 }
        #expect(harness.machine.maximumSendBody == 872)
        // id "x" (3 bytes), user "bob" (5 bytes), text field 2 + n bytes (n < 128: a one-byte length).
        // A body of exactly the limit is accepted: find the text length that makes 872 bytes.
        let fits = String(repeating: "a", count: 872 - 3 - 5 - 3)  // text length needs two bytes above 127
        #expect(IMClientMachine.bodySize(of: message("x", fits)) == 872)
        try harness.send(fits, id: "x")
        let over = fits + "a"
        var machine = harness.machine
        let now = harness.now
        #expect(throws: IMClientError.messageTooLarge(bytes: 873, limit: 872)) { try machine.send(text: over, to: .user("bob"), id: "y", now: now) }
        #expect(IMClientError.messageTooLarge(bytes: 873, limit: 872).description.contains("too large"))
        #expect(IMClientError.messageTooLarge(bytes: 873, limit: 872).description.contains("872 bytes"))
        #expect(harness.machine.unsettledMessages.map(\.id) == ["x"], "the refused one was never queued")
    }

    @Test("a message id over 128 UTF-8 bytes is refused with a typed error; 128 is fine")
    func longID() throws {
        var harness = ClientHarness()
        try harness.send("hi", id: String(repeating: "é", count: 64))  // 128 bytes
        var machine = harness.machine
        let now = harness.now
        let long = String(repeating: "é", count: 64) + "x"
        #expect(throws: IMClientError.messageIDTooLong(bytes: 129, limit: 128)) { try machine.send(text: "hi", to: .user("bob"), id: long, now: now) }
    }

    @Test("the limits LOGIN_ACK announces replace the assumed ones; a queued message over them fails as too large and is never written")
    func announcedLimits() throws {
        var harness = ClientHarness()
        harness.record(harness.machine.start(now: harness.now))
        let big = try harness.send(String(repeating: "b", count: 2_000))
        let small = try harness.send("small")
        harness.openAndLogin(answering: limits(send: 1_000, frame: 1_128))
        #expect(harness.machine.maximumSendBody == 1_000)
        let bigSize = IMClientMachine.bodySize(of: message(big, String(repeating: "b", count: 2_000)))
        #expect(harness.deliveries(of: big) == [.queued, .failed(.tooLarge(bytes: bigSize, limit: 1_000))])
        #expect(harness.sentIDs == [small], "the oversize one never goes out")
        #expect(IMSendFailure.tooLarge(bytes: bigSize, limit: 1_000).description.contains("limit is 1000 bytes"))
        var machine = harness.machine
        let now = harness.now
        #expect(
            throws: IMClientError.messageTooLarge(
                bytes: IMClientMachine.bodySize(of: message("z", String(repeating: "c", count: 1_500))), limit: 1_000)
        ) {
            try machine.send(text: String(repeating: "c", count: 1_500), to: .user("bob"), id: "z", now: now)
        }
    }

    @Test("the frame limit the server announces, when larger than the configured one, is what the client accepts")
    func announcedFrameLimit() {
        var harness = ClientHarness { $0.maximumFrameBody = 4_096 }
        harness.goOnline(answering: limits(send: 100_000, frame: 100_128))
        #expect(harness.machine.receiveLimit == 100_128)
        #expect(harness.machine.maximumSendBody == 100_000)
        // A server that announces nothing (an older one): the configured limits hold.
        harness.dropAndReopen()
        harness.openAndLogin(answering: IMLoginResponse())
        #expect(harness.machine.receiveLimit == 4_096 && harness.machine.maximumSendBody == 3_968)
    }

    @Test("SEND_ACK frameTooLarge settles the message as too large; no resend timer, reconnect or give-up ever sends it again")
    func refusedAsTooLarge() throws {
        var harness = ClientHarness {
            $0.ackTimeout = .seconds(5); $0.answerTimeout = .seconds(60)
        }
        harness.goOnline()
        let id = try harness.send("hello")
        let other = try harness.send("no id in the answer")
        harness.answerSend(of: id, code: .frameTooLarge)
        // The server could not read the id of the other one: the SEND_ACK's serial says which it is.
        harness.answerSend(of: other, code: .frameTooLarge, echoID: false)
        let size = IMClientMachine.bodySize(of: message(id, "hello"))
        #expect(harness.deliveries(of: id) == [.queued, .sent(attempt: 1), .failed(.tooLarge(bytes: size, limit: 65_408))])
        #expect(harness.deliveries(of: other).last.map { if case .failed(.tooLarge) = $0 { return true } else { return false } } == true)
        harness.advance(by: .seconds(60))
        harness.dropAndReopen()
        harness.openAndLogin()
        harness.advance(by: .seconds(60))
        #expect(harness.sends(of: id).count == 1 && harness.sends(of: other).count == 1)
        #expect(harness.written(.abandon).isEmpty)
        #expect(harness.machine.unsettledMessages.isEmpty)
    }

    @Test("frameTooLarge for a message an earlier connection may have stored: asked about with ABANDON, never sent again")
    func refusedAfterEarlierConnection() throws {
        var harness = ClientHarness()
        harness.goOnline()
        let stored = try harness.send("went out before")
        let lost = try harness.send("went out before too")
        harness.dropAndReopen()
        harness.openAndLogin()  // both sent again
        harness.answerSend(of: stored, code: .frameTooLarge)
        harness.answerSend(of: lost, code: .frameTooLarge)
        let abandons = try harness.written(.abandon).map { try $0.decode(IMAbandonRequest.self).ids }
        #expect(abandons == [[stored], [lost]])
        for abandon in harness.written(.abandon) {
            var response = IMAbandonResponse()
            var result = IMAbandonResult()
            result.id = try abandon.decode(IMAbandonRequest.self).ids[0]
            result.accepted = result.id == stored
            result.seq = result.accepted ? 12 : 0
            response.results = [result]
            harness.receive(IMFrame(command: .abandonAck, serial: abandon.serial, message: response))
        }
        #expect(harness.deliveries(of: stored).last == .stored(seq: 12))
        #expect(
            harness.deliveries(of: lost).last
                == .failed(.tooLarge(bytes: IMClientMachine.bodySize(of: message(lost, "went out before too")), limit: 65_408)))
        #expect(harness.sends(of: stored).count == 2 && harness.sends(of: lost).count == 2)
    }

    private func message(_ id: String, _ text: String) -> IMChatMessage {
        var message = IMChatMessage()
        message.id = id
        message.user = "bob"
        message.text = text
        return message
    }
}

@Suite("Client protocol machine: the server's rate limit")
struct ClientRateLimitTests {
    @Test("rateLimited in the middle of a burst pauses the whole outbox; the resends come out in the original order, attempts not counted")
    func pauseKeepsOrder() throws {
        var harness = ClientHarness()
        harness.goOnline()
        let ids = try (1...10).map { try harness.send("m\($0)") }
        #expect(harness.sentIDs == ids)
        for id in ids[0..<3] { harness.answerSend(of: id, code: .ok, seq: 1) }
        // The server refuses m4 and, from then on, everything on this connection until the wait is over:
        // m4's refusal alone puts back m4 and every later one, before their own refusals arrive.
        harness.answerSend(of: ids[3], code: .rateLimited, retryAfterMs: 400)
        #expect(ids[3...].allSatisfy { harness.deliveries(of: $0).last == .queued })
        for id in ids[4...] { harness.answerSend(of: id, code: .rateLimited, retryAfterMs: 400) }
        #expect(harness.rateLimitPauses == [.milliseconds(400)], "reported once per pause")
        // Sent while paused: it waits behind the others.
        let late = try harness.send("m11")
        let before = harness.written(.send).count
        harness.advance(by: .milliseconds(399))
        #expect(harness.written(.send).count == before, "nothing goes out during the pause")
        harness.advance(by: .milliseconds(1))
        let resent = Array(harness.sentIDs[before...])
        #expect(resent == Array(ids[3...]) + [late], "in the original order")
        #expect(harness.deliveries(of: ids[3]) == [.queued, .sent(attempt: 1), .queued, .sent(attempt: 1)])
        for id in ids[3...] + [late] { harness.answerSend(of: id, code: .ok, seq: 2) }
        #expect(harness.machine.unsettledMessages.isEmpty)
        #expect(harness.disconnects.isEmpty)
    }

    @Test("a refusal without a wait still pauses 50 ms; a message acknowledged while put back is settled, not sent again")
    func zeroWaitAndLateAck() throws {
        var harness = ClientHarness()
        harness.goOnline()
        let first = try harness.send("one")
        let second = try harness.send("two")
        harness.answerSend(of: first, code: .rateLimited, retryAfterMs: 0)
        #expect(harness.rateLimitPauses == [.milliseconds(50)])
        // A server without the connection-wide pause stored the second one after all.
        harness.answerSend(of: second, code: .ok, seq: 5)
        #expect(harness.deliveries(of: second).last == .stored(seq: 5))
        #expect(harness.machine.nextDeadline == harness.now + .milliseconds(50))
        harness.advance(by: .milliseconds(50))
        #expect(harness.sentIDs == [first, second, first])
    }

    @Test("the pause outlasts a reconnect: nothing is sent before it ends, then everything in order")
    func pauseAcrossReconnect() throws {
        var harness = ClientHarness {
            $0.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(100), jitter: 0)
        }
        harness.goOnline()
        let ids = try (1...3).map { try harness.send("m\($0)") }
        harness.answerSend(of: ids[0], code: .rateLimited, retryAfterMs: 2_000)
        harness.dropAndReopen()
        harness.openAndLogin()
        #expect(harness.sentIDs == ids, "not before the pause ends")
        harness.advance(by: .seconds(2))
        #expect(harness.sentIDs == ids + ids)
    }
}

@Suite("Client protocol machine: backoff and temporary refusals")
struct ClientBackoffTests {
    @Test("a session killed right after each login keeps the backoff growing; one online for stableSessionTime resets it")
    func backoffResetsOnlyAfterStableSession() {
        var harness = ClientHarness {
            $0.backoff = ReconnectBackoff.Policy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(60), jitter: 0)
            $0.stableSessionTime = .seconds(10)
        }
        harness.goOnline()
        var delays: [Duration] = []
        for _ in 0..<5 {
            harness.advance(by: .seconds(9))  // not long enough
            harness.record(harness.machine.transportClosed(generation: harness.generation, reason: .peerClosed, now: harness.now))
            guard case .reconnecting(let delay, _) = harness.machine.state else { Issue.record("\(harness.machine.state)"); return }
            delays.append(delay)
            harness.fireNext()
            harness.openAndLogin()
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16)])
        harness.advance(by: .seconds(10))
        harness.record(harness.machine.transportClosed(generation: harness.generation, reason: .peerClosed, now: harness.now))
        #expect(harness.machine.state == .reconnecting(in: .seconds(1), attempt: 1))
    }

    @Test(
        "LOGIN_ACK tooManyConnections is for now: retried no sooner than retry_after_ms, a little later at random",
        arguments: [IMStatusCode.tooManyConnections, .rateLimited])
    func loginRefusalHonoursRetryAfter(code: IMStatusCode) {
        var waits: [Duration] = []
        for seed in UInt64(1)...8 {
            var harness = ClientHarness { $0.jitter = .seeded(seed) }
            harness.record(harness.machine.start(now: harness.now))
            harness.record(harness.machine.transportOpened(generation: 1, now: harness.now))
            var response = IMLoginResponse()
            response.reason = "alice already has 4 sessions"
            response.retryAfterMs = 5_000
            harness.receive(IMFrame(command: .loginAck, serial: harness.lastWritten(.login)!.serial, code: code, message: response))
            guard case .reconnecting(let wait, _) = harness.machine.state else { Issue.record("\(harness.machine.state)"); return }
            waits.append(wait)
            let refusedAt = harness.now
            harness.fireNext()
            #expect(harness.opens == 2 && harness.now - refusedAt == wait)
            harness.record(harness.machine.transportOpened(generation: 2, now: harness.now))
            harness.receive(IMFrame(command: .loginAck, serial: harness.lastWritten(.login)!.serial, message: IMLoginResponse()))
            #expect(harness.machine.state == .online)
        }
        #expect(waits.allSatisfy { $0 >= .seconds(5) && $0 <= .milliseconds(6_250) }, "\(waits)")
        #expect(Set(waits).count > 4, "spread, not all at the same instant: \(waits)")
    }

    @Test(
        "ERROR tooManyConnections or shuttingDown with retry_after_ms: the next attempt waits at least that",
        arguments: [IMStatusCode.tooManyConnections, .shuttingDown])
    func errorHonoursRetryAfter(code: IMStatusCode) {
        var harness = ClientHarness()
        harness.goOnline()
        var notice = IMErrorNotice()
        notice.message = "busy"
        notice.retryAfterMs = 3_000
        harness.receive(IMFrame(command: .error, serial: 0, code: code, message: notice))
        #expect(harness.disconnects == [.serverError(code, "busy")])
        guard case .reconnecting(let wait, _) = harness.machine.state else { Issue.record("\(harness.machine.state)"); return }
        #expect(wait >= .seconds(3) && wait <= .milliseconds(3_750))
        // The floor is for that one attempt: the next failure is back on the plain backoff.
        harness.fireNext()
        harness.record(harness.machine.transportClosed(generation: harness.generation, reason: .failed(.refused), now: harness.now))
        guard case .reconnecting(let next, _) = harness.machine.state else { Issue.record("\(harness.machine.state)"); return }
        #expect(next <= .seconds(1))
    }

    @Test(
        "ERROR tooSlow and sessionReplaced: the connection is dropped and reconnected with backoff",
        arguments: [IMStatusCode.tooSlow, .sessionReplaced])
    func serverErrorsReconnect(code: IMStatusCode) {
        var harness = ClientHarness()
        harness.goOnline()
        harness.receive(IMFrame(command: .error, serial: 0, code: code, message: IMErrorNotice()))
        #expect(harness.disconnects.count == 1)
        guard case .reconnecting(let wait, _) = harness.machine.state else { Issue.record("\(harness.machine.state)"); return }
        #expect(wait > .zero)
        harness.fireNext()
        harness.openAndLogin()
        #expect(harness.machine.state == .online && harness.opens == 2)
    }

    @Test("every LOGIN carries the configuration's client instance, the same across reconnects; each configuration makes its own")
    func clientInstance() throws {
        var harness = ClientHarness()
        harness.goOnline()
        harness.dropAndReopen()
        harness.openAndLogin()
        let instances = try harness.written(.login).map { try $0.decode(IMLoginRequest.self).clientInstance }
        #expect(instances.count == 2 && Set(instances).count == 1)
        #expect(instances[0] == harness.machine.configuration.clientInstance && !instances[0].isEmpty)
        #expect(IMClientConfiguration(user: "a", password: "").clientInstance != IMClientConfiguration(user: "a", password: "").clientInstance)
        let chosen = ClientHarness { $0.clientInstance = "laptop-1" }
        #expect(chosen.machine.configuration.clientInstance == "laptop-1")
    }
}
