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
            let (server, ends) = serverNotingEnds(clock)
            let start = clock.now
            // (user, announced keepalive): dropped after 1.5 × that much silence.
            let peers = [("a", 10), ("b", 4), ("c", 20)].map { user, keepalive in
                logInSilently(user, keepalive: keepalive, to: server, on: loop)
            }
            #expect(peers.allSatisfy { $0.received.first?.command == .loginAck })
            let deadlines = try #require(server.deadlinesByModes.values.first)
            #expect(server.deadlinesByModes.count == 1)
            // One each, and b's login deadline left stale: its keepalive deadline came earlier.
            #expect(deadlines.entryCount == 4)
            // b heartbeats every 2 s until 20 s: each moves its deadline later with no new entry.
            for serial in 2...11 {
                try runManualClock(loop, clock, to: start + .seconds(2 * (serial - 1)))
                peers[1].send(IMFrame(command: .heartbeat, serial: UInt32(serial)))
                #expect(deadlines.entryCount <= 4)
            }
            try runManualClock(loop, clock, to: start + .seconds(40))
            #expect(ends.sinceStart == ["a": .seconds(15), "b": .seconds(26), "c": .seconds(30)])
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
            try runManualClock(loop, clock, to: clock.now + .seconds(120))
            #expect(ended.count == 1)
            #expect(!ended.contains { if case .keepaliveExpired = $0 { true } else { false } })
            #expect(deadlines.entryCount == 0)
            server.shutdown()
        }
    }

    @Test("deadlines inside one 250 ms tick end together at its boundary, never before their own")
    func deadlinesEndOnTicks() async throws {
        try await onManualClockLoop { loop, clock in
            let (server, ends) = serverNotingEnds(clock)
            let start = clock.now
            // Keepalive 10 s: silent sessions are due 15 s after their login. Logins at 0, 10, 60 and
            // 260 ms put the first deadline on a boundary, two inside the next tick and one in the one after.
            var peers: [MemoryLinkPeer] = []
            for (user, at) in [("a", 0), ("b", 10), ("c", 60), ("d", 260)] {
                try runManualClock(loop, clock, to: start + .milliseconds(at))
                peers.append(logInSilently(user, keepalive: 10, to: server, on: loop))
            }
            #expect(peers.allSatisfy { $0.received.first?.command == .loginAck })
            try runManualClock(loop, clock, to: start + .seconds(16))
            #expect(
                ends.sinceStart == [
                    "a": .seconds(15), "b": .milliseconds(15_250), "c": .milliseconds(15_250),
                    "d": .milliseconds(15_500)
                ])
            server.shutdown()
        }
    }

    @Test("a session's slot keeps its two optional instants in a word each, a heap entry is two words (issue 22)")
    func slotSize() {
        #expect(MemoryLayout<SessionDeadlines.Slot>.size <= 24)
        #expect(SessionDeadlines.entryStride == 16)
    }

    @Test("the timer wakes at the first 250 ms boundary at or after an entry's instant")
    func wakeUpRoundsUpToTheTick() {
        let boundary = LoopInstant(nanoseconds: 1_000_250_000_000)
        #expect(SessionDeadlines.wakeUp(for: boundary) == boundary)
        #expect(SessionDeadlines.wakeUp(for: LoopInstant(nanoseconds: 1_000_000_000_001)) == boundary)
        #expect(SessionDeadlines.wakeUp(for: LoopInstant(nanoseconds: 1_000_249_999_999)) == boundary)
        #expect(SessionDeadlines.wakeUp(for: .distantFuture) == .distantFuture)
    }

    @Test("sessions one after another reuse one place in the deadlines' table; the last is still told at its deadline")
    func placesAreReused() async throws {
        try await onManualClockLoop { loop, clock in
            let (server, ends) = serverNotingEnds(clock, settings: .withoutLoginLimits)
            let start = clock.now
            for index in 0..<20 {
                try runManualClock(loop, clock, to: start + .milliseconds(250 * index))
                let peer = logInSilently("u\(index)", keepalive: 10, to: server, on: loop)
                #expect(peer.received.first?.command == .loginAck)
                peer.send(IMFrame(command: .heartbeat, serial: 2))
                if index < 19 { peer.send(IMFrame(command: .logout, serial: 3)) }
            }
            let table = try #require(server.deadlinesByModes.values.first)
            #expect(table.placeCount == 1)
            // Every earlier session's entry is stale in that place; none of them tells the last one.
            try runManualClock(loop, clock, to: start + .seconds(21))
            #expect(ends.sinceStart["u19"] == .milliseconds(4_750 + 15_000))
            #expect(table.entryCount == 0)
            server.shutdown()
        }
    }

    /// When each user's session ended, as time since the server was made.
    private final class EndTimes {
        var sinceStart: [String: Duration] = [:]
    }

    @Test("the heap drops a crowd's entries and room as it leaves, and keeps the deadlines of those who stay")
    func heapShrinksAfterACrowd() async throws {
        try await onManualClockLoop { loop, clock in
            let (server, ends) = serverNotingEnds(clock, settings: .withoutLoginLimits)
            let start = clock.now
            // 300 leave at once; 10 stay, silent, dropped at their 1.5 × 100 s. Under a sanitizer 100
            // leave: each login settled one at a time costs more the more are online (two minutes of
            // the thread sanitizer's CI run, four of AddressSanitizer's), and 110 entries still fill
            // a room the stayers' 10 are under a quarter of, so the rebuild below is still needed.
            let crowdSize = scaledUnderSanitizers(plain: 300, sanitized: 100)
            let crowd = (0..<crowdSize).map { logInSilently("c\($0)", keepalive: 10, to: server, on: loop) }
            let stayers = (0..<10).map { logInSilently("s\($0)", keepalive: 100, to: server, on: loop) }
            #expect((crowd + stayers).allSatisfy { $0.received.first?.command == .loginAck })
            let deadlines = try #require(server.deadlinesByModes.values.first)
            #expect(deadlines.capacity >= crowdSize + 10)
            for peer in crowd { peer.send(IMFrame(command: .logout, serial: 2)) }
            // Gone with their sessions, long before their deadlines (15 s) would have surfaced: the
            // heap is rebuilt once the live entries fill a quarter of its room, so at most three
            // stale entries per live one stay until they surface.
            try runManualClock(loop, clock, to: start + .seconds(1))
            #expect(deadlines.entryCount <= 4 * 10)
            #expect(deadlines.capacity < 64)
            try runManualClock(loop, clock, to: start + .seconds(20))
            #expect(deadlines.entryCount == 10)
            try runManualClock(loop, clock, to: start + .seconds(160))
            #expect((0..<10).allSatisfy { ends.sinceStart["s\($0)"] == .seconds(150) })
            #expect(deadlines.entryCount == 0)
            server.shutdown()
        }
    }

    private func serverNotingEnds(_ clock: ManualClock, settings: IMServer.Settings = IMServer.Settings()) -> (IMServer, EndTimes) {
        let server = IMServer(store: InMemoryIMStore(), settings: settings)
        let start = clock.now
        let ends = EndTimes()
        server.onSessionEnd = { _, session, _ in ends.sinceStart[session.user ?? "?"] = clock.now - start }
        return (server, ends)
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
                // A session adopted goes last in the server's open sessions (a PlacedArray).
                server.adopt(MemoryLinkPeer(loop: loop).serverEnd)
                return server.open.all.last
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
