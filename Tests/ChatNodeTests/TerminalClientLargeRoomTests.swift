import RunLoopChat
import RunLoopKit
import RunLoopTesting
import Testing

@testable import ChatNodeKit

/// A large room at the terminal (docs/PROTOCOL.md §8): the node sends no presence of its members, so
/// every line that gives its count says their presence is not shown, and a room of the user's that
/// crosses the node's size gets a line of its own — silence never reads as "offline".
@Suite("Terminal client: large rooms say their members' presence is not shown")
struct TerminalClientLargeRoomTests {
    @Test(
        "with a size of 2: the join, /rooms and /status of a 3-member room say \"presence not shown\"; a login that finds its room large says so; a LEAVE back to 2 says presence is shown again"
    )
    func largeRoomLines() async throws {
        try await onManualClockLoop { loop, clock in
            var chat = ChatService.Settings()
            chat.largeRoomMembers = 2
            let node = MemoryChatNode(loop: loop, clock: clock, chatSettings: chat)
            let (_, aliceFirst) = try node.script("alice", "/join town")
            #expect(aliceFirst.contains("* joined town (1 member)") && !aliceFirst.contains("presence"), "\(aliceFirst.dump)")
            let (_, bob) = try node.script("bob", "/join town", "/rooms")
            #expect(bob.contains("* joined town (2 members)") && bob.contains("  town — 2 members, joined"), "\(bob.dump)")
            #expect(!bob.contains("presence"), "at the size a room is not large: \(bob.dump)")

            // carol stays: the third member makes the room large, and each of her lines says so once.
            let carolSees = Transcript()
            let carol = node.terminal("carol", into: carolSees)
            type("/join town", "/rooms", "/status", into: carol)
            carol.start()
            try #require(try node.runUntil { carolSees.contains("* connected") && carolSees.contains("* no messages pending") }, "\(carolSees.dump)")
            #expect(carolSees.contains("* joined town (3 members · presence not shown)"), "\(carolSees.dump)")
            #expect(carolSees.contains("  town — 3 members · presence not shown, joined"), "\(carolSees.dump)")
            #expect(carolSees.contains(", room town (large: presence not shown)"), "\(carolSees.dump)")
            #expect(!carolSees.contains("* town is large"), "her own answers said it already: \(carolSees.dump)")

            // alice comes back: the room list read at login finds her room large.
            let aliceSees = Transcript()
            let alice = node.terminal("alice", into: aliceSees)
            alice.start()
            try #require(try node.runUntil { aliceSees.contains("* current room: town") }, "\(aliceSees.dump)")
            #expect(aliceSees.count("* town is large (3 members · presence not shown)") == 1, "\(aliceSees.dump)")
            #expect(!aliceSees.contains("carol joined"), "a large room's joins are not announced: \(aliceSees.dump)")

            // carol leaves: back at the size, the LEAVE is announced and alice's room is not large any more.
            carol.receive(line: "/leave")
            try #require(try node.runUntil { aliceSees.contains("* carol left town (2 members)") }, "\(aliceSees.dump)")
            let switched = try #require(aliceSees.index(of: "* town is no longer large (2 members · presence shown)"), "\(aliceSees.dump)")
            #expect(switched < (aliceSees.index(of: "* carol left town") ?? 0), "the verdict comes before the notice that brought it")
            #expect(carolSees.contains("* left town (2 members)"), "\(carolSees.dump)")
            for client in [alice, carol] { client.endOfInput() }
            weak let watchedAlice = alice
            weak let watchedCarol = carol
            try #require(try node.runUntil { watchedAlice?.exitStatus != nil && watchedCarol?.exitStatus != nil })
        }
    }

    @Test("counts are grouped in thousands, as a person reads them")
    func grouping() {
        #expect(groupedThousands(0) == "0" && groupedThousands(999) == "999")
        #expect(groupedThousands(1_234) == "1,234" && groupedThousands(1_234_567) == "1,234,567" && groupedThousands(-1_000) == "-1,000")
    }
}
