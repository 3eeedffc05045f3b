import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// An ``IMClient`` following a ``NetworkReachability`` while its real link goes down and comes back
/// (network namespaces, root only; skipped with the reason otherwise).
///
/// One loop thread holds both ends: the ``IMServer`` listens in the server namespace, the client and
/// its reachability live in the client namespace (``ClientNamespaceFixture``). Waits are bounded by
/// generous hang guards; the promises ("says why within a second", "back within a second of the
/// link") are checked on times measured with the loop's clock. The only fixed waits are the windows in
/// which nothing may happen (at most a second).
@Suite("IMClient across a network namespace link", NetworkNamespaces.available)
struct ClientNetworkNamespaceTests {
    /// Short heartbeat and answer timeout (ping-pong would notice a dead link within a second too, so a
    /// drop for any other reason than the reachability's shows up in the reason), fast backoff.
    static func aliceConfiguration(_ tweak: (inout IMClientConfiguration) -> Void = { _ in }) -> IMClientConfiguration {
        clientConfiguration("alice") {
            $0.heartbeat = .fixed(.milliseconds(500))
            $0.answerTimeout = .milliseconds(500)
            $0.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200))
            tweak(&$0)
        }
    }

    /// What happened, gathered on the loop thread and checked afterwards.
    struct Outcome: Sendable {
        var cameOnline = false
        var firstID = ""
        var firstDeliveries: [IMDeliveryState] = []
        /// From just before `ip link set … down` to the disconnect.
        var detection: Duration?
        var stateAfterDrop: IMConnectionState = .idle
        var disconnects: [IMDisconnectReason] = []
        /// States reported from link down until just before link up.
        var statesWhileDown: [IMConnectionState] = []
        var attemptsWhileDown = -1
        var acceptsWhileDown = -1
        var reconnectAttemptsWhileDown = -1
        var secondID = ""
        var secondWhileDown: [IMDeliveryState] = []
        /// From just before `ip link set … up` to the first connection attempt after it.
        var attemptAfterUp: Duration?
        /// From just before `ip link set … up` to `.online`.
        var reconnect: Duration?
        var statesAfterUp: [IMConnectionState] = []
        var attemptsAfterUp = -1
        var secondDeliveries: [IMDeliveryState] = []
        var peerMessageIDs: [String] = []
        var peerDisconnects: [IMDisconnectReason] = []
        var storedCount = -1
        var settledTwice: [String] = []
        var finalState: IMConnectionState = .idle
    }

    func expectTheLinkIsTheReason(
        _ reason: IMDisconnectReason?, peer: String, device: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard case .networkUnreachable(let why)? = reason else {
            Issue.record("dropped for another reason: \(String(describing: reason))", sourceLocation: sourceLocation)
            return
        }
        #expect(why.contains("no route to \(peer)"), "says why: \(why)", sourceLocation: sourceLocation)
        #expect(why.contains("link \(device) down"), "names the link: \(why)", sourceLocation: sourceLocation)
    }

    @Test("link down: one disconnect saying why, no attempts, sends queue; link up: back within a second, the queued message delivered once")
    func linkDownAndUp() async throws {
        let (outcome, peer, device) = try await withNamespacePair { pair in
            let outcome = try await onLoopThread { () throws -> Outcome in
                let loop = RunLoop.current
                let fixture = try ClientNamespaceFixture(pair: pair, configuration: Self.aliceConfiguration(), withPeer: true)
                defer { try? fixture.close() }
                let client = fixture.client, log = fixture.log, peerLog = fixture.peerLog
                var outcome = Outcome()

                // 1. Online, and 2. a message sent now reaches bob.
                outcome.cameOnline = try spin(loop, for: .seconds(20)) { client.state == .online }
                guard outcome.cameOnline else { return outcome }
                let first = try client.send("while online", to: .user("bob"))
                outcome.firstID = first
                try spin(loop, for: .seconds(10)) {
                    log.deliveries[first]?.last?.isFinal == true && peerLog.messages.contains { $0.id == first }
                }
                outcome.firstDeliveries = log.deliveries[first] ?? []

                // 3. The link goes down: one disconnect that says why, then waiting for the network.
                let stateMark = log.states.count
                let attemptMark = fixture.attempts.count
                let acceptMark = fixture.accepts.count
                try pair.setClientLink(up: false)
                // Timed from the moment the ip command returned: spawning it on a loaded machine took over a
                // second in CI, and the loop thread runs nothing of the client's until the command is back.
                let down = loop.now
                try spin(loop, for: .seconds(10)) { !log.disconnects.isEmpty }
                outcome.detection = log.disconnects.first.map { $0.0 - down }
                outcome.stateAfterDrop = client.state

                // 4. A message sent while down is queued, not failed.
                let second = try client.send("while down", to: .user("bob"))
                outcome.secondID = second

                // Nothing may happen while the link stays down: no attempt, no second disconnect.
                try loop.runUntil(timeout: .seconds(1)) { false }
                outcome.statesWhileDown = Array(log.states[stateMark...])
                outcome.attemptsWhileDown = fixture.attempts.count - attemptMark
                outcome.acceptsWhileDown = fixture.accepts.count - acceptMark
                outcome.reconnectAttemptsWhileDown = client.machine.reconnectAttempts
                outcome.secondWhileDown = log.deliveries[second] ?? []

                // 5. The link comes back: online within a second, the queued message goes out once.
                let upMark = log.states.count
                let onlineMark = log.onlineAt.count
                try pair.setClientLink(up: true)
                // Timed from the moment the ip command returned: spawning it on a loaded machine took over a
                // second in CI, and the loop thread runs nothing of the client's until the command is back.
                let up = loop.now
                try spin(loop, for: .seconds(10)) { log.onlineAt.count > onlineMark }
                outcome.reconnect = log.onlineAt.count > onlineMark ? log.onlineAt[onlineMark] - up : nil
                try spin(loop, for: .seconds(10)) {
                    log.deliveries[second]?.last?.isFinal == true && peerLog.messages.contains { $0.id == second }
                }
                // Room for a duplicate (a second login, a resend) to show up.
                try loop.runUntil(timeout: .milliseconds(200)) { false }
                outcome.statesAfterUp = Array(log.states[upMark...])
                outcome.attemptsAfterUp = fixture.attempts.count - attemptMark - outcome.attemptsWhileDown
                outcome.secondDeliveries = log.deliveries[second] ?? []
                outcome.disconnects = log.disconnects.map(\.1)
                outcome.peerMessageIDs = peerLog.messages.map(\.id)
                outcome.peerDisconnects = peerLog.disconnects.map(\.1)
                outcome.storedCount = fixture.store.storedCount
                outcome.settledTwice = log.settledTwice
                outcome.finalState = client.state
                return outcome
            }
            return (outcome, pair.serverAddress, pair.clientDevice)
        }
        print(
            "client link down → disconnect after \(String(describing: outcome.detection)); link up → online after \(String(describing: outcome.reconnect))"
        )

        // 1, 2
        try #require(outcome.cameOnline, "alice never came online")
        #expect(outcome.firstDeliveries == [.queued, .sent(attempt: 1), .stored(seq: 1)])

        // 3: exactly one disconnect, for the network, saying why, within a second; then waiting.
        #expect(outcome.disconnects.count == 1, "exactly one disconnect: \(outcome.disconnects)")
        expectTheLinkIsTheReason(outcome.disconnects.first, peer: peer, device: device)
        #expect(outcome.detection.map { $0 < .seconds(1) } == true, "detected after \(String(describing: outcome.detection))")
        if case .networkUnreachable(let why)? = outcome.disconnects.first {
            #expect(outcome.stateAfterDrop == .waitingForNetwork(why))
        }
        #expect(
            !outcome.statesWhileDown.isEmpty && outcome.statesWhileDown.allSatisfy { $0.isWaitingForNetwork },
            "only waiting for the network while down: \(outcome.statesWhileDown)")
        #expect(outcome.attemptsWhileDown == 0, "connection attempts while down")
        #expect(outcome.acceptsWhileDown == 0, "connections the server accepted while down")
        #expect(outcome.reconnectAttemptsWhileDown == 0, "backoff attempts spent while down")

        // 4
        #expect(outcome.secondWhileDown == [.queued])

        // 5: one attempt, straight to online (a "no carrier" moment on the way up may repeat the wait).
        #expect(outcome.reconnect.map { $0 < .seconds(1) } == true, "online after \(String(describing: outcome.reconnect))")
        #expect(
            outcome.statesAfterUp.filter { !$0.isWaitingForNetwork } == [.connecting(attempt: 1), .loggingIn, .online],
            "\(outcome.statesAfterUp)")
        #expect(outcome.attemptsAfterUp == 1)
        #expect(outcome.finalState == .online)
        #expect(outcome.secondDeliveries == [.queued, .sent(attempt: 1), .stored(seq: 2)])
        #expect(outcome.peerMessageIDs == [outcome.firstID, outcome.secondID], "each message reached bob exactly once")
        #expect(outcome.peerDisconnects.isEmpty, "bob, in the server namespace, never lost his connection")
        #expect(outcome.storedCount == 2)
        #expect(outcome.settledTwice.isEmpty)
    }

    @Test("a link down for many times the backoff cap spends no attempts: no give-up, attempt 1 when it returns")
    func longOutageSpendsNoAttempts() async throws {
        let (outcome, peer, device) = try await withNamespacePair { pair in
            let outcome = try await onLoopThread { () throws -> Outcome in
                let loop = RunLoop.current
                // Two attempts, 100 ms cap: a client counting the outage against its budget would have
                // given up (closed) within the first few hundred milliseconds of the window below.
                let configuration = Self.aliceConfiguration {
                    $0.backoff = ReconnectBackoff.Policy(
                        initialDelay: .milliseconds(50), maximumDelay: .milliseconds(100),
                        maximumAttempts: 2)
                }
                let fixture = try ClientNamespaceFixture(pair: pair, configuration: configuration, withPeer: false)
                defer { try? fixture.close() }
                let client = fixture.client, log = fixture.log
                var outcome = Outcome()
                outcome.cameOnline = try spin(loop, for: .seconds(20)) { client.state == .online }
                guard outcome.cameOnline else { return outcome }

                let stateMark = log.states.count
                let attemptMark = fixture.attempts.count
                let acceptMark = fixture.accepts.count
                try pair.setClientLink(up: false)
                // Timed from the moment the ip command returned: spawning it on a loaded machine took over a
                // second in CI, and the loop thread runs nothing of the client's until the command is back.
                let down = loop.now
                try spin(loop, for: .seconds(10)) { !log.disconnects.isEmpty }
                outcome.detection = log.disconnects.first.map { $0.0 - down }
                outcome.stateAfterDrop = client.state
                // Ten times the cap.
                try loop.runUntil(timeout: .seconds(1)) { false }
                outcome.statesWhileDown = Array(log.states[stateMark...])
                outcome.attemptsWhileDown = fixture.attempts.count - attemptMark
                outcome.acceptsWhileDown = fixture.accepts.count - acceptMark
                outcome.reconnectAttemptsWhileDown = client.machine.reconnectAttempts
                outcome.disconnects = log.disconnects.map(\.1)

                let upMark = log.states.count
                try pair.setClientLink(up: true)
                // Timed from the moment the ip command returned: spawning it on a loaded machine took over a
                // second in CI, and the loop thread runs nothing of the client's until the command is back.
                let up = loop.now
                try spin(loop, for: .seconds(10)) { log.onlineAt.count > 1 }
                outcome.reconnect = log.onlineAt.count > 1 ? log.onlineAt[1] - up : nil
                outcome.statesAfterUp = Array(log.states[upMark...])
                outcome.attemptsAfterUp = fixture.attempts.count - attemptMark - outcome.attemptsWhileDown
                outcome.finalState = client.state
                return outcome
            }
            return (outcome, pair.serverAddress, pair.clientDevice)
        }
        print(
            "long outage: disconnect after \(String(describing: outcome.detection)); online after \(String(describing: outcome.reconnect)) of link up"
        )

        try #require(outcome.cameOnline, "alice never came online")
        #expect(outcome.disconnects.count == 1, "\(outcome.disconnects)")
        expectTheLinkIsTheReason(outcome.disconnects.first, peer: peer, device: device)
        #expect(outcome.stateAfterDrop.isWaitingForNetwork, "\(outcome.stateAfterDrop)")
        #expect(
            !outcome.statesWhileDown.isEmpty && outcome.statesWhileDown.allSatisfy { $0.isWaitingForNetwork },
            "stays waiting for the network, never gives up: \(outcome.statesWhileDown)")
        #expect(outcome.attemptsWhileDown == 0)
        #expect(outcome.acceptsWhileDown == 0)
        #expect(outcome.reconnectAttemptsWhileDown == 0)
        #expect(outcome.reconnect.map { $0 < .seconds(1) } == true, "online after \(String(describing: outcome.reconnect))")
        #expect(
            outcome.statesAfterUp.filter { !$0.isWaitingForNetwork } == [.connecting(attempt: 1), .loggingIn, .online],
            "\(outcome.statesAfterUp)")
        #expect(outcome.attemptsAfterUp == 1)
        #expect(outcome.finalState == .online)
    }

    @Test("started while the link is down: waits without an attempt, connects within a second of the link")
    func startedWhileDown() async throws {
        let (outcome, peer, device) = try await withNamespacePair { pair in
            let outcome = try await onLoopThread { () throws -> Outcome in
                let loop = RunLoop.current
                try pair.setClientLink(up: false)
                let fixture = try ClientNamespaceFixture(pair: pair, configuration: Self.aliceConfiguration(), withPeer: false)
                defer { try? fixture.close() }
                let client = fixture.client, log = fixture.log
                var outcome = Outcome()
                outcome.stateAfterDrop = client.state
                let second = try client.send("before the network", to: .user("bob"))
                try loop.runUntil(timeout: .milliseconds(500)) { false }
                outcome.statesWhileDown = log.states
                outcome.attemptsWhileDown = fixture.attempts.count
                outcome.acceptsWhileDown = fixture.accepts.count
                outcome.secondWhileDown = log.deliveries[second] ?? []

                try pair.setClientLink(up: true)
                // Timed from the moment the ip command returned: spawning it on a loaded machine took over a
                // second in CI, and the loop thread runs nothing of the client's until the command is back.
                let up = loop.now
                outcome.cameOnline = try spin(loop, for: .seconds(10)) { !log.onlineAt.isEmpty }
                outcome.reconnect = log.onlineAt.first.map { $0 - up }
                try spin(loop, for: .seconds(10)) { log.deliveries[second]?.last?.isFinal == true }
                outcome.secondDeliveries = log.deliveries[second] ?? []
                outcome.statesAfterUp = Array(log.states[outcome.statesWhileDown.count...])
                outcome.attemptsAfterUp = fixture.attempts.count
                outcome.disconnects = log.disconnects.map(\.1)
                return outcome
            }
            return (outcome, pair.serverAddress, pair.clientDevice)
        }
        print("started while down: online after \(String(describing: outcome.reconnect)) of link up")

        #expect(outcome.stateAfterDrop == .waitingForNetwork("no route to \(peer); link \(device) down"), "\(outcome.stateAfterDrop)")
        #expect(outcome.statesWhileDown.allSatisfy { $0.isWaitingForNetwork }, "\(outcome.statesWhileDown)")
        #expect(outcome.attemptsWhileDown == 0)
        #expect(outcome.acceptsWhileDown == 0)
        #expect(outcome.secondWhileDown == [.queued])
        #expect(outcome.cameOnline)
        #expect(outcome.reconnect.map { $0 < .seconds(1) } == true, "online after \(String(describing: outcome.reconnect))")
        #expect(
            outcome.statesAfterUp.filter { !$0.isWaitingForNetwork } == [.connecting(attempt: 1), .loggingIn, .online],
            "\(outcome.statesAfterUp)")
        #expect(outcome.attemptsAfterUp == 1)
        #expect(outcome.secondDeliveries == [.queued, .sent(attempt: 1), .stored(seq: 1)])
        #expect(outcome.disconnects.isEmpty, "a connection that never opened is no disconnect: \(outcome.disconnects)")
    }

    /// Losing the carrier (the peer's end goes down; routes stay, flagged `linkdown`) is judged like a
    /// link down. The kernel adds a wait of its own on the way back: the drop's RST, sent while the
    /// carrier was gone, left the server's neighbour (ARP) entry INCOMPLETE, and the new SYN waits for
    /// the next ARP retransmission (every `retrans_time_ms`, 1 s by default) — so the client's promise
    /// checked here is "it tries again within a second of the carrier", and online follows within the
    /// ARP retransmit time after that.
    @Test("the peer's end going down takes the client's carrier: the same drop and wait; it tries again as soon as the carrier is back")
    func carrierLost() async throws {
        let (outcome, device) = try await withNamespacePair { pair in
            let outcome = try await onLoopThread { () throws -> Outcome in
                let loop = RunLoop.current
                let fixture = try ClientNamespaceFixture(pair: pair, configuration: Self.aliceConfiguration(), withPeer: false)
                defer { try? fixture.close() }
                let client = fixture.client, log = fixture.log
                var outcome = Outcome()
                outcome.cameOnline = try spin(loop, for: .seconds(20)) { client.state == .online }
                guard outcome.cameOnline else { return outcome }

                let stateMark = log.states.count
                let attemptMark = fixture.attempts.count
                try pair.setServerLink(up: false)
                // Timed from the moment the ip command returned: spawning it on a loaded machine took over a
                // second in CI, and the loop thread runs nothing of the client's until the command is back.
                let down = loop.now
                try spin(loop, for: .seconds(10)) { !log.disconnects.isEmpty }
                outcome.detection = log.disconnects.first.map { $0.0 - down }
                outcome.stateAfterDrop = client.state
                try loop.runUntil(timeout: .milliseconds(500)) { false }
                outcome.statesWhileDown = Array(log.states[stateMark...])
                outcome.attemptsWhileDown = fixture.attempts.count - attemptMark
                outcome.disconnects = log.disconnects.map(\.1)

                let upMark = log.states.count
                try pair.setServerLink(up: true)
                // Timed from the moment the ip command returned: spawning it on a loaded machine took over a
                // second in CI, and the loop thread runs nothing of the client's until the command is back.
                let up = loop.now
                try spin(loop, for: .seconds(10)) { log.onlineAt.count > 1 }
                outcome.attemptAfterUp = fixture.attempts.count > attemptMark ? fixture.attempts[attemptMark] - up : nil
                outcome.reconnect = log.onlineAt.count > 1 ? log.onlineAt[1] - up : nil
                outcome.statesAfterUp = Array(log.states[upMark...])
                outcome.attemptsAfterUp = fixture.attempts.count - attemptMark - outcome.attemptsWhileDown
                outcome.finalState = client.state
                return outcome
            }
            return (outcome, pair.clientDevice)
        }
        print(
            "carrier lost → disconnect after \(String(describing: outcome.detection)); carrier back → attempt after \(String(describing: outcome.attemptAfterUp)), online after \(String(describing: outcome.reconnect))"
        )

        try #require(outcome.cameOnline, "alice never came online")
        #expect(outcome.disconnects == [.networkUnreachable("link \(device) has no carrier")], "\(outcome.disconnects)")
        #expect(outcome.detection.map { $0 < .seconds(1) } == true, "detected after \(String(describing: outcome.detection))")
        #expect(outcome.stateAfterDrop == .waitingForNetwork("link \(device) has no carrier"))
        #expect(
            !outcome.statesWhileDown.isEmpty && outcome.statesWhileDown.allSatisfy { $0.isWaitingForNetwork },
            "\(outcome.statesWhileDown)")
        #expect(outcome.attemptsWhileDown == 0)
        #expect(outcome.attemptAfterUp.map { $0 < .seconds(1) } == true, "tried again after \(String(describing: outcome.attemptAfterUp))")
        // Plus at most one ARP retransmission (see above).
        #expect(outcome.reconnect.map { $0 < .seconds(2) } == true, "online after \(String(describing: outcome.reconnect))")
        #expect(
            outcome.statesAfterUp.filter { !$0.isWaitingForNetwork } == [.connecting(attempt: 1), .loggingIn, .online],
            "\(outcome.statesAfterUp)")
        #expect(outcome.attemptsAfterUp == 1)
        #expect(outcome.finalState == .online)
    }
}
