import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// The server's sessions share one timer for their login and keepalive deadlines (issue 22: a timer
/// per connection was most of an idle connection's memory). Each session must still be dropped at its
/// own 1.5 × keepalive, and a heartbeat — which moves a deadline later — must not add heap entries.
@Suite("Session deadlines on one timer (manual clock)")
struct SessionDeadlinesTests {
    @Test("sessions with different keepalives end each at its own deadline; heartbeats add no entries")
    func eachSessionAtItsOwnDeadline() async throws {
        try await onManualClockLoop { loop, clock in
            let server = IMServer(store: InMemoryIMStore())
            let start = clock.now
            var ended: [String: Duration] = [:]
            server.onSessionEnd = { _, session, _ in ended[session.user ?? "?"] = clock.now - start }
            // (user, announced keepalive): dropped after 1.5 × that much silence.
            let peers = [("a", 10), ("b", 4), ("c", 20)].map { user, keepalive in
                let peer = MemoryLinkPeer(loop: loop)
                server.adopt(peer.serverEnd)
                var login = IMLoginRequest()
                login.user = user
                login.keepaliveSeconds = UInt32(keepalive)
                peer.send(IMFrame(command: .login, serial: 1, message: login))
                return peer
            }
            #expect(peers.allSatisfy { $0.received.first?.command == .loginAck })
            let deadlines = try #require(server.deadlinesByModes.values.first)
            #expect(server.deadlinesByModes.count == 1)
            // One each, and b's login deadline left stale: its keepalive deadline came earlier.
            #expect(deadlines.entryCount == 4)
            // b heartbeats every 2 s until 20 s: each moves its deadline later with no new entry.
            for serial in 2...11 {
                try advance(loop, clock, to: start + .seconds(2 * (serial - 1)))
                peers[1].send(IMFrame(command: .heartbeat, serial: UInt32(serial)))
                #expect(deadlines.entryCount <= 4)
            }
            try advance(loop, clock, to: start + .seconds(40))
            #expect(ended == ["a": .seconds(15), "b": .seconds(26), "c": .seconds(30)])
            #expect(deadlines.entryCount == 0)
            server.shutdown()
        }
    }

    @Test("a session that ends before its deadline is not told; its stale entry goes when it surfaces")
    func endedSessionIsDropped() async throws {
        try await onManualClockLoop { loop, clock in
            let server = IMServer(store: InMemoryIMStore())
            var ended: [IMSessionEndReason] = []
            server.onSessionEnd = { _, _, reason in ended.append(reason) }
            let peer = MemoryLinkPeer(loop: loop)
            server.adopt(peer.serverEnd)
            #expect(peer.logIn("quitter") != nil)
            let deadlines = try #require(server.deadlinesByModes.values.first)
            #expect(deadlines.entryCount == 1)
            peer.send(IMFrame(command: .logout, serial: 2))
            try advance(loop, clock, to: clock.now + .seconds(120))
            #expect(ended.count == 1)
            #expect(!ended.contains { if case .keepaliveExpired = $0 { true } else { false } })
            #expect(deadlines.entryCount == 0)
            server.shutdown()
        }
    }

    /// Runs the loop until the manual clock reads `instant` (timers on the way fire at their times).
    private func advance(_ loop: RunLoop, _ clock: ManualClock, to instant: LoopInstant) throws {
        while clock.now < instant {
            if try loop.run(.default, until: instant) == .finished { clock.advance(to: instant) }
        }
    }
}

/// Issue 22: a session's settings were copied into every session (some 130 bytes each).
@Suite("Session settings shared by the server's sessions (manual clock)")
struct SharedSessionSettingsTests {
    @Test("sessions opened between two settings changes share one copy; a change reaches only later ones")
    func sessionsShareTheirSettings() async throws {
        try await onManualClockLoop { loop, clock in
            let server = IMServer(store: InMemoryIMStore())
            func open() -> IMServerSession? {
                let before = Set(server.open.keys)
                server.adopt(MemoryLinkPeer(loop: loop).serverEnd)
                return server.open.first { !before.contains($0.key) }?.value
            }
            let first = try #require(open())
            let second = try #require(open())
            #expect(first.machine.shared === second.machine.shared)
            server.settings.session.loginTimeout = .seconds(3)
            let third = try #require(open())
            #expect(third.machine.shared !== first.machine.shared)
            #expect(third.machine.settings.loginTimeout == .seconds(3))
            #expect(first.machine.settings.loginTimeout == IMServerSessionMachine.Settings().loginTimeout)
            server.shutdown()
        }
    }
}
