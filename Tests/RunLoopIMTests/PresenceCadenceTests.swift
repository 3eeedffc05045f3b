import RunLoopChat
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// `IMServer.Settings.presenceInterval` (docs/PROTOCOL.md §8): a change after a quiet interval is
/// announced at the end of its pass, the changes that follow within the interval together at its end —
/// so a crowd's arrivals reach each contact in one announcement per interval, not one per arrival.
@Suite("Presence announced at most once per interval")
struct PresenceCadenceTests {
    @Test("the decision: no interval or a quiet one, at the end of the pass; within one, at its end")
    func decision() {
        let start = LoopInstant(nanoseconds: 1_000_000_000)
        let every100ms = PresenceCadence.Pace(interval: .milliseconds(100))
        var cadence = PresenceCadence()
        #expect(cadence.announcement(now: start, pace: every100ms) == nil, "nothing announced yet")
        cadence.announced(at: start)
        #expect(cadence.announcement(now: start + .milliseconds(30), pace: PresenceCadence.Pace(interval: .zero)) == nil, "no interval")
        #expect(cadence.announcement(now: start + .milliseconds(30), pace: every100ms) == start + .milliseconds(100))
        #expect(cadence.announcement(now: start + .milliseconds(100), pace: every100ms) == nil, "the interval is over")
        #expect(cadence.announcement(now: start + .milliseconds(150), pace: every100ms) == nil)
    }

    @Test("the write budget: the wait after an announcement is its writes at the budget's rate when longer than the interval, up to the longest")
    func writeBudget() {
        let pace = PresenceCadence.Pace(interval: .milliseconds(100), writesPerSecond: 10_000, longestInterval: .seconds(1))
        #expect(PresenceCadence.wait(afterWriting: 0, pace: pace) == .milliseconds(100))
        #expect(PresenceCadence.wait(afterWriting: 999, pace: pace) == .milliseconds(100), "one room of 1,000: the interval")
        #expect(PresenceCadence.wait(afterWriting: 5_000, pace: pace) == .milliseconds(500))
        #expect(PresenceCadence.wait(afterWriting: 9_500, pace: pace) == .milliseconds(950), "19 rooms of 500 online")
        #expect(PresenceCadence.wait(afterWriting: 50_000, pace: pace) == .seconds(1), "at most the longest")
        #expect(PresenceCadence.wait(afterWriting: .max, pace: pace) == .seconds(1), "no overflow")
        var noBudget = pace
        noBudget.writesPerSecond = 0
        #expect(PresenceCadence.wait(afterWriting: 50_000, pace: noBudget) == .milliseconds(100))
        var budgetOnly = pace
        budgetOnly.interval = .zero
        #expect(PresenceCadence.wait(afterWriting: 0, pace: budgetOnly) == .zero)
        #expect(PresenceCadence.wait(afterWriting: 2_000, pace: budgetOnly) == .milliseconds(200))

        let start = LoopInstant(nanoseconds: 1_000_000_000)
        var cadence = PresenceCadence()
        cadence.announced(at: start)
        cadence.wrote(3_000)
        cadence.wrote(2_000)
        #expect(cadence.announcement(now: start + .milliseconds(30), pace: pace) == start + .milliseconds(500), "writes add up")
        #expect(cadence.announcement(now: start + .milliseconds(500), pace: pace) == nil)
        cadence.announced(at: start + .seconds(2))
        #expect(
            cadence.announcement(now: start + .seconds(2), pace: pace) == start + .milliseconds(2_100),
            "an announcement counts its own writes from zero")
    }

    @Test(
        "on the manual clock with a budget of 20 writes a second: after writing to 4 sessions the next waits 200 ms, not 100; two users told to 7 sessions (12 frames) wait 350 ms — sessions reading single frames or batches",
        arguments: [false, true]
    )
    func crowdPacedByItsWrites(batches: Bool) async throws {
        try await onManualClockLoop(autoAdvances: false) { loop, clock in
            var settings = IMServer.Settings.withoutLoginLimits
            settings.presenceInterval = .milliseconds(100)
            settings.presenceWritesPerSecond = 20
            settings.longestPresenceInterval = .milliseconds(400)
            let store = InMemoryIMStore()
            let watchers = ["w1", "w2", "w3", "w4"]
            for user in watchers + ["ann", "ben", "cy", "dot"] { _ = store.join(room: "lobby", user: user) }
            let server = IMServer(store: store, settings: settings)
            server.applicationHandler = ChatService()
            var announced: [(user: String, at: LoopInstant)] = []
            server.onPresenceChange = { _, user, online in if online { announced.append((user, loop.now)) } }
            var peers: [MemoryLinkPeer] = []
            func logIn(_ user: String) {
                let peer = MemoryLinkPeer()
                peer.keepsFrames = user.hasPrefix("w")
                server.adopt(peer.serverEnd)
                peer.logIn(user, readsPresenceBatches: batches)
                peers.append(peer)
            }
            for watcher in watchers {
                logIn(watcher)
                clock.advance(by: .seconds(1))
                _ = try loop.run(.default, timeout: .zero)
            }
            let w1 = peers[0]
            func seen() -> [String] {
                // Single or batched: the flush counts a session once either way.
                PresenceBatchTests.notices(w1).filter { $0.hasSuffix(" online") }.map { String($0.dropLast(" online".count)) }
            }
            try #require(announced.map(\.user) == watchers)
            try #require(seen() == ["w2", "w3", "w4"])

            clock.advance(by: .seconds(1))
            let start = loop.now
            logIn("ann")
            #expect(announced.last?.user == "ann")
            #expect(announced.last?.at == start, "after a quiet interval: at the end of its pass, to the 4 watchers")

            clock.advance(by: .milliseconds(10))
            logIn("ben")
            clock.advance(by: .milliseconds(10))
            logIn("cy")
            clock.advance(to: start + .milliseconds(100))
            _ = try loop.run(.default, timeout: .zero)
            w1.settle()
            #expect(seen().suffix(1) == ["ann"], "4 writes at 20 a second: 200 ms, not the interval's 100")

            clock.advance(to: start + .milliseconds(200))
            _ = try loop.run(.default, timeout: .zero)
            w1.settle()
            #expect(seen().suffix(2) == ["ben", "cy"])
            #expect(announced.suffix(2).map(\.at) == [start + .milliseconds(200), start + .milliseconds(200)], "together")

            // ben and cy went to the 4 watchers, ann and each other: 12 frames to 7 sessions, so
            // 350 ms (counted by frames it would be 600 ms, cut to the longest, 400).
            clock.advance(by: .milliseconds(10))
            logIn("dot")
            clock.advance(to: start + .milliseconds(549))
            _ = try loop.run(.default, timeout: .zero)
            #expect(announced.last?.user == "cy", "dot waits")
            clock.advance(to: start + .milliseconds(550))
            _ = try loop.run(.default, timeout: .zero)
            #expect(announced.last?.user == "dot")
            #expect(announced.last?.at == start + .milliseconds(550))
            server.shutdown()
        }
    }
}
