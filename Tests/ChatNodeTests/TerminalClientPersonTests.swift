import Glibc
import RunLoopIMCore
import RunLoopKit
import RunLoopTesting
import Testing

@testable import ChatNodeKit

/// What a person meets in the terminal client: why it cannot connect, a line typed during a slow
/// request, the room from before, history in reading order, a message to a room left.
@Suite("Terminal client: what a person sees")
struct TerminalClientPersonTests {
    @Test("an attempt that never reaches the node says where, why and when again; a drop after login still says reconnecting")
    func cannotConnect() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            node.stop()
            let seen = Transcript()
            let alice = node.terminal("alice", into: seen)
            alice.start()
            try #require(try node.runUntil { seen.count("* cannot connect to ") >= 2 }, "\(seen.dump)")
            let failures = seen.lines(startingWith: "* cannot connect to ")
            #expect(
                failures[0].hasPrefix("* cannot connect to 127.0.0.1:7100: connection refused (is the node running?) — retrying in ")
                    && failures[0].hasSuffix(" s"), "\(seen.dump)")
            #expect(failures[1].hasSuffix(" s (attempt 2)"), "\(seen.dump)")
            #expect(!seen.contains("* reconnecting in "), "no connection was lost: none was made")

            node.restart()
            try #require(try node.runUntil { seen.contains("* connected") }, "\(seen.dump)")
            var stopped = false
            node.stop { stopped = true }
            try #require(try node.runUntil { stopped && seen.contains("* reconnecting in ") }, "\(seen.dump)")
            alice.quit()
            try #require(try node.runUntil { alice.exitStatus != nil })
        }
    }

    @Test("the causes are named, with a hint where one helps")
    func connectFailureCauses() {
        #expect(
            TerminalConnectFailure.line(node: "127.0.0.1:27999", reason: .transport(.failed(.refused)), retryIn: .milliseconds(500), attempt: 1)
                == "* cannot connect to 127.0.0.1:27999: connection refused (is the node running?) — retrying in 0.5 s")
        #expect(TerminalConnectFailure.cause(.transport(.failed(.unreachable))).hasPrefix("host unreachable (is the address right?"))
        #expect(TerminalConnectFailure.cause(.transport(.failed(.timedOut))).hasPrefix("timed out ("))
        #expect(TerminalConnectFailure.cause(.loginTimeout) == "no answer to the login in time (is it a chat node?)")
        #expect(TerminalConnectFailure.cause(.transport(.failed(.other("no such host")))) == "no such host")
    }

    @Test("interactive: a message typed behind a request that keeps the room shows queued at once; behind /join it waits")
    func queuedAtOnce() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            let seen = Transcript()
            var configuration = terminalConfiguration("alice")
            configuration.followsReachability = false
            configuration.isInteractive = true
            let alice = TerminalClient(configuration: configuration, connector: node.connector, loop: loop) { seen.lines.append($0) }
            type("/join lobby", into: alice)
            alice.start()
            try #require(try node.runUntil { seen.contains("* joined lobby") })
            var stopped = false
            node.stop { stopped = true }
            try #require(try node.runUntil { stopped && seen.contains("* reconnecting in ") })

            type("/history", into: alice)
            try #require(try node.runUntil { seen.contains("… /history [lobby] waits for the connection") }, "\(seen.dump)")
            type("typed while /history waits", into: alice)
            let queued = try node.runUntil(timeout: .milliseconds(20)) { seen.contains("→ m1 queued [lobby]: typed while /history waits") }
            try #require(queued, "\(seen.dump)")
            type("/join kitchen", into: alice)
            type("for the kitchen", into: alice)
            #expect(!(try node.runUntil(timeout: .seconds(1)) { seen.contains("for the kitchen") }), "its room is known only once /join ran")

            node.restart()
            try #require(try node.runUntil { seen.contains("→ m2 queued [kitchen]: for the kitchen") }, "\(seen.dump)")
            try #require(try node.runUntil { seen.contains("→ m1 stored") && seen.contains("→ m2 stored") }, "\(seen.dump)")
            alice.endOfInput()
            try #require(try node.runUntil { alice.exitStatus != nil })
            #expect(alice.exitStatus == 0, "\(seen.dump)")
        }
    }

    @Test("a new session takes the one room the user is in from before as its current room; with several it asks")
    func restoresRoom() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            _ = try node.script("alice", "/join lobby")
            let (again, seen) = try node.script("alice", "plain text after a restart")
            #expect(seen.contains("* current room: lobby (joined earlier)"), "\(seen.dump)")
            #expect(seen.contains("→ m1 queued [lobby]: plain text after a restart") && again.exitStatus == 0, "\(seen.dump)")
            #expect(again.currentRoom == "lobby")

            _ = try node.script("bob", "/join lobby", "/join kitchen")
            let (_, bobSees) = try node.script("bob", "which room?")
            let choice = bobSees.lines(startingWith: "* you are in ")
            #expect(choice.count == 1 && choice[0].hasSuffix(": /join ROOM picks where plain text goes"), "\(bobSees.dump)")
            #expect(choice.first?.contains("kitchen") == true && choice.first?.contains("lobby") == true)
            #expect(bobSees.contains("! no current room: /join ROOM first (or /msg USER TEXT)"), "\(bobSees.dump)")
        }
    }

    @Test("a message to a room the user left says so and how to get back in")
    func roomLeft() async throws {
        try await onManualClockLoop { loop, clock in
            let node = MemoryChatNode(loop: loop, clock: clock)
            let (alice, seen) = try node.script("alice", "/join lobby", "/leave", "/room lobby still here?")
            #expect(seen.contains("→ m1 failed: you are not in lobby (/join lobby)"), "\(seen.dump)")
            #expect(alice.exitStatus == 1)
        }
    }

    @Test("a history entry from today shows the time; one from another day its date too")
    func historyDates() {
        var noon = tm()
        noon.tm_year = 2026 - 1900
        noon.tm_mon = 2
        noon.tm_mday = 14
        noon.tm_hour = 12
        noon.tm_isdst = -1
        let now = mktime(&noon)
        let twoHoursAgo = UInt64(now - 7200) * 1000
        let yesterday = UInt64(now - 86_400) * 1000
        #expect(clockTime(milliseconds: twoHoursAgo, now: now) == "10:00:00")
        #expect(clockTime(milliseconds: yesterday, now: now) == "2026-03-13 12:00")
    }
}
