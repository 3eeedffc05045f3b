import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

/// Issue 22: a ChatClient asks for PRESENCE_BATCH and reports a batch's notices one by one, so its
/// owner hears exactly what single PRESENCE frames would have told it, in the same order.
@Suite("Presence batches in the chat client")
struct PresenceBatchClientTests {
    /// What dan heard, and whether its login was told batches come: ann, ben and cat online in the
    /// lobby when dan logs in (its snapshot), then eve logs in and ann leaves (announcements).
    private func danHears(readsPresenceBatches: Bool) async throws -> (presence: [PresenceChange], batched: Bool) {
        try await onManualClockLoop { loop, clock in
            let store = InMemoryIMStore()
            for user in ["ann", "ben", "cat", "dan", "eve"] { _ = store.join(room: "lobby", user: user) }
            let fixture = ChatFixture(loop: loop, clock: clock, store: store)
            let (ann, _) = try fixture.online("ann")
            _ = try fixture.online("ben")
            _ = try fixture.online("cat")
            try fixture.bench.advance(by: .milliseconds(100))
            let (dan, danLog) = try fixture.online("dan", readsPresenceBatches: readsPresenceBatches)
            try fixture.bench.advance(by: .milliseconds(100))
            _ = try fixture.online("eve")
            try fixture.bench.advance(by: .milliseconds(100))
            ann.close()
            try spin(loop) { !fixture.server.onlineUsers.contains("ann") }
            try fixture.bench.advance(by: .milliseconds(100))
            let heard = (danLog.presence, dan.connection.receivesPresenceBatches)
            try fixture.tearDown()
            return heard
        }
    }

    @Test("a login's snapshot and the announcements after it: the same changes, in the same order, batched or single")
    func sameChangesEitherWay() async throws {
        let batched = try await danHears(readsPresenceBatches: true)
        let single = try await danHears(readsPresenceBatches: false)
        #expect(batched.batched, "the server agreed to send batches")
        #expect(!single.batched)
        let expected =
            ["ann", "ben", "cat"].map { PresenceChange(user: $0, isOnline: true) } + [
                PresenceChange(user: "eve", isOnline: true), PresenceChange(user: "ann", isOnline: false)
            ]
        #expect(single.presence == expected)
        #expect(batched.presence == single.presence)
    }

    @Test("a ChatClient asks for batches at its logins; an IMClient alone does not")
    func chatClientAsks() async throws {
        try await onManualClockLoop { loop, clock in
            let fixture = ChatFixture(loop: loop, clock: clock)
            let (chat, _) = try fixture.online("ann")
            #expect(chat.connection.readsPresenceBatches && chat.connection.receivesPresenceBatches)
            #expect(!IMClientConfiguration(user: "ann", password: "pw").readsPresenceBatches)
            try fixture.tearDown()
        }
    }
}
