import RunLoopChat
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// Issue 22: a session that asked for PRESENCE_BATCH (docs/PROTOCOL.md §8) gets each snapshot page
/// and each announcement's notices in one frame (or a few, under the batch bound), the same notices
/// in the same order as single frames; a session that did not ask gets single frames as before.
@Suite("Presence batches")
struct PresenceBatchTests {
    typealias Fixture = PresenceAudienceTests.Fixture

    /// Every presence notice `peer` received, single or batched, in order, as "user online|offline".
    static func notices(_ peer: MemoryLinkPeer?) -> [String] {
        (peer?.received ?? []).flatMap { frame -> [(user: String, online: Bool)] in
            switch frame.command {
            case .presence: return (try? frame.presenceNotice()).map { [$0] } ?? []
            case .presenceBatch: return (try? frame.presenceBatchNotices()) ?? []
            default: return []
            }
        }.map { "\($0.user) \($0.online ? "online" : "offline")" }
    }

    /// What each user's peer received of presence, and how many frames of each kind, when m0…m5 are
    /// in the lobby: m0…m3 log in, then m4 (its snapshot: four), then m5, then m1 and m2 leave —
    /// every peer asking for batches or none.
    private func crowd(
        batches: Bool
    ) async throws -> (notices: [String: [String]], kinds: [String: [IMCommand]], singles: Int, batched: Int, agreed: [Bool]) {
        try await onLoopThread {
            let chat = Fixture()
            let members = (0..<6).map { "m\($0)" }
            chat.join(members, "lobby")
            var agreed: [Bool] = []
            var peers: [String: MemoryLinkPeer] = [:]
            func logIn(_ user: String) throws {
                let peer = MemoryLinkPeer()
                chat.server.adopt(peer.serverEnd)
                let ack = try #require(peer.logIn(user, readsPresenceBatches: batches))
                agreed.append(try ack.decode(IMLoginResponse.self).presenceBatches)
                peers[user] = peer
                try chat.settle()
                for peer in peers.values { peer.settle() }
            }
            for user in members.prefix(5) { try logIn(user) }
            try logIn("m5")
            for user in ["m1", "m2"] { peers[user]?.pair.apply(.reset) }
            try chat.settle()
            for peer in peers.values { peer.settle() }
            let all = peers.values.flatMap(\.received)
            let kinds = peers.mapValues { $0.received.compactMap(\.command).filter { $0 == .presence || $0 == .presenceBatch } }
            return (
                peers.mapValues { Self.notices($0) }, kinds, all.count { $0.command == .presence }, all.count { $0.command == .presenceBatch }, agreed
            )
        }
    }

    @Test("batches carry exactly the notices single frames carry, in the same order; a client that did not ask gets single frames only")
    func batchesReadAsSingles() async throws {
        let batched = try await crowd(batches: true)
        let singles = try await crowd(batches: false)
        #expect(batched.notices == singles.notices)
        #expect(singles.notices["m4"] == ["m0 online", "m1 online", "m2 online", "m3 online", "m5 online", "m1 offline", "m2 offline"])
        #expect(batched.agreed == Array(repeating: true, count: 6), "LOGIN_ACK says batches come to those who asked")
        #expect(singles.agreed == Array(repeating: false, count: 6), "and not to the others")
        #expect(singles.batched == 0, "an older client never sees command 25")
        // m4's snapshot of four is one batch; an arrival owes each contact one notice, a single frame;
        // m1 and m2 leaving together owe m0 two, one batch.
        #expect(batched.kinds["m4"] == [.presenceBatch, .presence, .presenceBatch], "\(batched.kinds)")
        #expect(batched.kinds["m0"] == [.presence, .presence, .presence, .presence, .presence, .presenceBatch], "\(batched.kinds)")
        #expect(singles.kinds["m0"] == Array(repeating: .presence, count: 7))
        #expect(batched.singles + batched.batched < singles.singles, "\(batched) against \(singles.singles) single frames")
    }

    @Test("a snapshot page over the batch bound comes in several batches, each within the bound and the session's frame limit, in order")
    func overTheBoundIsSplit() async throws {
        try await onLoopThread {
            var settings = IMServer.Settings.withoutLoginLimits
            settings.maximumFrameBody = 1_024
            let chat = Fixture(settings: settings)
            // 30 names of 60 bytes: entries of 66 bytes, about 2 KB of notices for one page.
            let members = (0..<30).map { "member\($0)-" + String(repeating: "x", count: 60 - "member\($0)-".utf8.count) }
            chat.join(members + ["newcomer"], "lobby")
            for user in members { chat.logIn(user, keepingFrames: false) }
            try chat.settle()
            let newcomer = MemoryLinkPeer()
            chat.server.adopt(newcomer.serverEnd)
            newcomer.logIn("newcomer", readsPresenceBatches: true)
            try chat.settle()
            let batches = newcomer.received(.presenceBatch)
            #expect(batches.count == 2, "\(batches.map(\.body.count))")
            #expect(batches.allSatisfy { $0.body.count <= 1_024 && $0.serial == 0 })
            #expect(newcomer.received(.presence).isEmpty)
            #expect(Self.notices(newcomer) == members.sorted().map { "\($0) online" }, "the room's members, in the audience's order")
        }
    }
}
