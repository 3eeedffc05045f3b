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
        var cadence = PresenceCadence()
        #expect(cadence.announcement(now: start, interval: .milliseconds(100)) == nil, "nothing announced yet")
        cadence.announced(at: start)
        #expect(cadence.announcement(now: start + .milliseconds(30), interval: .zero) == nil, "no interval")
        #expect(cadence.announcement(now: start + .milliseconds(30), interval: .milliseconds(100)) == start + .milliseconds(100))
        #expect(cadence.announcement(now: start + .milliseconds(100), interval: .milliseconds(100)) == nil, "the interval is over")
        #expect(cadence.announcement(now: start + .milliseconds(150), interval: .milliseconds(100)) == nil)
    }

    @Test(
        "on the manual clock: the first arrival at once, the next two within 100 ms together at its end, one after a quiet interval at once again"
    )
    func crowdWithinAnInterval() async throws {
        try await onManualClockLoop(autoAdvances: false) { loop, clock in
            var settings = IMServer.Settings.withoutLoginLimits
            settings.presenceInterval = .milliseconds(100)
            let store = InMemoryIMStore()
            for user in ["watcher", "ann", "ben", "cy", "dot"] { _ = store.join(room: "lobby", user: user) }
            let server = IMServer(store: store, settings: settings)
            server.applicationHandler = ChatService()
            var announced: [(String, LoopInstant)] = []
            server.onPresenceChange = { _, user, online in if online { announced.append((user, loop.now)) } }
            let start = loop.now
            let watcher = MemoryLinkPeer()
            server.adopt(watcher.serverEnd)
            watcher.logIn("watcher")
            func seen() -> [String] {
                watcher.received(.presence).compactMap { try? $0.decode(IMPresenceNotice.self).user }
            }
            func logIn(_ user: String) {
                let peer = MemoryLinkPeer()
                peer.keepsFrames = false
                server.adopt(peer.serverEnd)
                peer.logIn(user)
                watcher.settle()
            }
            #expect(announced.map(\.0) == ["watcher"], "the first change: at the end of its pass")

            clock.advance(by: .milliseconds(10))
            logIn("ann")
            clock.advance(by: .milliseconds(10))
            logIn("ben")
            #expect(seen().isEmpty, "ann and ben came within 100 ms of the last announcement: they wait")

            clock.advance(to: start + .milliseconds(100))
            _ = try loop.run(.default, timeout: .zero)
            watcher.settle()
            #expect(seen() == ["ann", "ben"])
            #expect(announced.map(\.0) == ["watcher", "ann", "ben"])
            #expect(announced.last?.1 == start + .milliseconds(100), "together, at the interval's end")

            clock.advance(by: .milliseconds(500))
            logIn("cy")
            #expect(seen() == ["ann", "ben", "cy"], "after a quiet interval: at the end of its pass")
            #expect(announced.last?.1 == start + .milliseconds(600))
            server.shutdown()
        }
    }
}
