import RunLoopChat
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import SwiftProtobuf
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// Issue 22: the node's presence work per notice is cut (snapshot pages encoded straight from the
/// names, the announcement grouped by slot): every session must still get the same frames in the same
/// order. A crowd in three rooms and two direct conversations — clients that read PRESENCE_BATCH and
/// clients that do not, a user with two sessions, names long enough that batches are cut at the frame
/// limit, snapshot pages of four, announcements cut into passes at their bounds — and the presence
/// frames each session received, pinned frame by frame. Recorded with the cuts in place (branch
/// `snode`), not by running main `561814c`'s code: what makes them main's is that the cuts keep its
/// rules (a lone notice as its frame, a snapshot page as a batch, singles one by one to the clients
/// that did not ask for batches), and PresenceBatchWireTests, which holds the new batch writer to the
/// old frames byte for byte.
@Suite("Presence frame sequences")
struct PresenceFrameSequenceTests {
    /// A presence frame as "P name±" or "B[name± …]", a long name by its part before "-".
    static func describe(_ frame: IMFrame) -> String? {
        func notice(_ notice: (user: String, online: Bool)) -> String {
            "\(notice.user.split(separator: "-").first ?? "")\(notice.online ? "+" : "-")"
        }
        switch frame.command {
        case .presence: return (try? frame.presenceNotice()).map { "P " + notice($0) }
        case .presenceBatch: return (try? frame.presenceBatchNotices()).map { "B[" + $0.map(notice).joined(separator: " ") + "]" }
        default: return nil
        }
    }

    /// What each session (its user, `#`, the order it logged in) received of presence, and every
    /// presence frame's body as received.
    private func crowd() async throws -> (sequences: [String: [String]], frames: [IMFrame]) {
        try await onLoopThread {
            var settings = IMServer.Settings.withoutLoginLimits
            settings.maximumFrameBody = 1_024
            settings.presenceSnapshotPage = 4
            settings.presenceChangesPerPass = 3
            settings.presenceAudiencePerPass = 12
            let chat = PresenceAudienceTests.Fixture(settings: settings)
            let short = (0..<10).map { "a\($0)" }
            // 61-byte names: 16 notices of 65-byte entries are over one batch of 1,024 bytes.
            let long = (0..<16).map { "l\($0)-" + String(repeating: "x", count: 61 - "l\($0)-".utf8.count) }
            chat.join(Array(short[0...6]) + long[0...1], "r1")
            chat.join(Array(short[5...9]) + long[2...3], "r2")
            chat.join(long + short[0...2], "r3")
            chat.converse("a0", "a9")
            chat.converse(long[3], "a2")
            var peers: [(key: String, peer: MemoryLinkPeer)] = []
            func logIn(_ user: String, settling: Bool = true) {
                let peer = MemoryLinkPeer()
                chat.server.adopt(peer.serverEnd)
                // Two of three read batches.
                peer.logIn(user, settling: settling, readsPresenceBatches: peers.count % 3 != 1)
                peers.append(("\(user.split(separator: "-").first ?? "")#\(peers.count)", peer))
            }
            func settle() throws {
                // The announcement's later passes and the snapshots' pages, pass by pass.
                for _ in 0..<12 {
                    try chat.settle()
                    for (_, peer) in peers { peer.settle() }
                }
            }
            for user in short[0...3] {
                logIn(user)
                try settle()
            }
            // A crowd in one pass: one announcement, cut at its bounds, written when it is done.
            for user in long + short[4...8] { logIn(user, settling: false) }
            try settle()
            logIn("a0")
            try settle()
            // Four leave together.
            for key in ["a1#1", "l2#6", "l5#9", "a6#22"] {
                try #require(peers.first { $0.key == key }).peer.pair.apply(.reset)
            }
            try settle()
            logIn("a9")
            try settle()
            let sequences = Dictionary(uniqueKeysWithValues: peers.map { ($0.key, $0.peer.received.compactMap(Self.describe)) })
            let frames = peers.flatMap { $0.peer.received.filter { $0.command == .presence || $0.command == .presenceBatch } }
            chat.server.shutdown()
            return (sequences, frames)
        }
    }

    /// What each session got, frame by frame.
    static let pinned: [String: [String]] = [
        "a0#0": [
            "P a1+", "P a2+", "P a3+", "B[l0+ l1+ l2+ l3+ l4+ l5+ l6+ l7+ l8+ l9+ l10+ l11+ l12+ l13+ l14+]", "B[l15+ a4+ a5+ a6+]",
            "B[a1- l2- l5- a6-]", "P a9+"
        ],
        "a0#25": [
            "P a1+", "P a2+", "P a3+", "P a4+", "P a5+", "P a6+", "P l0+", "P l1+", "P l10+", "P l11+", "P l12+", "P l13+", "P l14+", "P l15+",
            "P l2+", "P l3+", "P l4+", "P l5+", "P l6+", "P l7+", "P l8+", "P l9+", "P a1-", "P l2-", "P l5-", "P a6-", "P a9+"
        ],
        "a1#1": [
            "P a0+", "P a2+", "P a3+", "P l0+", "P l1+", "P l2+", "P l3+", "P l4+", "P l5+", "P l6+", "P l7+", "P l8+", "P l9+", "P l10+", "P l11+",
            "P l12+", "P l13+", "P l14+", "P l15+", "P a4+", "P a5+", "P a6+"
        ],
        "a2#2": [
            "B[a0+ a1+]", "P a3+", "B[l0+ l1+ l2+ l3+ l4+ l5+ l6+ l7+ l8+ l9+ l10+ l11+ l12+ l13+ l14+]", "B[l15+ a4+ a5+ a6+]", "B[a1- l2- l5- a6-]"
        ],
        "a3#3": ["B[a0+ a1+ a2+]", "B[l0+ l1+ a4+ a5+ a6+]", "B[a1- a6-]"],
        "a4#20": ["B[a0+ a1+ a2+ a3+]", "B[l0+]", "B[l0+ l1+ a5+ a6+]", "B[a1- a6-]"],
        "a5#21": ["B[a0+ a1+ a2+ a3+]", "B[l0+]", "B[l0+ l1+ l2+ l3+ a4+ a6+ a7+ a8+]", "B[a1- l2- a6-]", "P a9+"],
        "a6#22": ["P a0+", "P a1+", "P a2+", "P a3+", "P l0+", "P l0+", "P l1+", "P l2+", "P l3+", "P a4+", "P a5+", "P a7+", "P a8+"],
        "a7#23": ["B[l2+ l3+ a5+ a6+ a8+]", "B[l2- a6-]", "P a9+"],
        "a8#24": ["B[l2+ l3+ a5+ a6+ a7+]", "B[l2- a6-]", "P a9+"],
        "a9#26": ["B[a0+ a5+ a7+ a8+]", "B[l3+]"],
        "l0#4": [
            "P a0+", "P a1+", "P a2+", "P a3+", "P l1+", "P l2+", "P l3+", "P l4+", "P l5+", "P l6+", "P l7+", "P l8+", "P l9+", "P l10+", "P l11+",
            "P l12+", "P l13+", "P l14+", "P l15+", "P a4+", "P a5+", "P a6+", "P a1-", "P l2-", "P l5-", "P a6-"
        ],
        "l1#5": [
            "B[a0+ a1+ a2+ a3+]", "B[l0+]", "B[l0+ l2+ l3+ l4+ l5+ l6+ l7+ l8+ l9+ l10+ l11+ l12+ l13+ l14+ l15+ a4+ a5+]", "B[a6+]",
            "B[a1- l2- l5- a6-]"
        ],
        "l10#14": ["B[a0+ a1+ a2+]", "B[l0+ l1+ l2+ l3+ l4+ l5+ l6+ l7+ l8+ l9+ l11+ l12+ l13+ l14+ l15+]", "B[a1- l2- l5-]"],
        "l11#15": ["B[a0+ a1+ a2+]", "B[l0+ l1+ l2+ l3+ l4+ l5+ l6+ l7+ l8+ l9+ l10+ l12+ l13+ l14+ l15+]", "B[a1- l2- l5-]"],
        "l12#16": [
            "P a0+", "P a1+", "P a2+", "P l0+", "P l1+", "P l2+", "P l3+", "P l4+", "P l5+", "P l6+", "P l7+", "P l8+", "P l9+", "P l10+", "P l11+",
            "P l13+", "P l14+", "P l15+", "P a1-", "P l2-", "P l5-"
        ],
        "l13#17": ["B[a0+ a1+ a2+]", "B[l0+ l1+ l2+ l3+ l4+ l5+ l6+ l7+ l8+ l9+ l10+ l11+ l12+ l14+ l15+]", "B[a1- l2- l5-]"],
        "l14#18": ["B[a0+ a1+ a2+]", "B[l0+ l1+ l2+ l3+ l4+ l5+ l6+ l7+ l8+ l9+ l10+ l11+ l12+ l13+ l15+]", "B[a1- l2- l5-]"],
        "l15#19": [
            "P a0+", "P a1+", "P a2+", "P l0+", "P l1+", "P l2+", "P l3+", "P l4+", "P l5+", "P l6+", "P l7+", "P l8+", "P l9+", "P l10+", "P l11+",
            "P l12+", "P l13+", "P l14+", "P a1-", "P l2-", "P l5-"
        ],
        "l2#6": ["B[a0+ a1+ a2+]", "B[l0+ l1+ l3+ l4+ l5+ l6+ l7+ l8+ l9+ l10+ l11+ l12+ l13+ l14+ l15+ a5+ a6+]", "B[a7+ a8+]"],
        "l3#7": [
            "P a0+", "P a1+", "P a2+", "P l0+", "P l1+", "P l2+", "P l4+", "P l5+", "P l6+", "P l7+", "P l8+", "P l9+", "P l10+", "P l11+", "P l12+",
            "P l13+", "P l14+", "P l15+", "P a5+", "P a6+", "P a7+", "P a8+", "P a1-", "P l2-", "P l5-", "P a6-", "P a9+"
        ],
        "l4#8": ["B[a0+ a1+ a2+]", "B[l0+ l1+ l2+ l3+ l5+ l6+ l7+ l8+ l9+ l10+ l11+ l12+ l13+ l14+ l15+]", "B[a1- l2- l5-]"],
        "l5#9": ["B[a0+ a1+ a2+]", "B[l0+ l1+ l2+ l3+ l4+ l6+ l7+ l8+ l9+ l10+ l11+ l12+ l13+ l14+ l15+]"],
        "l6#10": [
            "P a0+", "P a1+", "P a2+", "P l0+", "P l1+", "P l2+", "P l3+", "P l4+", "P l5+", "P l7+", "P l8+", "P l9+", "P l10+", "P l11+", "P l12+",
            "P l13+", "P l14+", "P l15+", "P a1-", "P l2-", "P l5-"
        ],
        "l7#11": ["B[a0+ a1+ a2+]", "B[l0+ l1+ l2+ l3+ l4+ l5+ l6+ l8+ l9+ l10+ l11+ l12+ l13+ l14+ l15+]", "B[a1- l2- l5-]"],
        "l8#12": ["B[a0+ a1+ a2+]", "B[l0+ l1+ l2+ l3+ l4+ l5+ l6+ l7+ l9+ l10+ l11+ l12+ l13+ l14+ l15+]", "B[a1- l2- l5-]"],
        "l9#13": [
            "P a0+", "P a1+", "P a2+", "P l0+", "P l1+", "P l2+", "P l3+", "P l4+", "P l5+", "P l6+", "P l7+", "P l8+", "P l10+", "P l11+", "P l12+",
            "P l13+", "P l14+", "P l15+", "P a1-", "P l2-", "P l5-"
        ]
    ]

    @Test("every session gets the presence frames pinned for it, in the same order")
    func sameFramesAsPinned() async throws {
        let (sequences, _) = try await crowd()
        #expect(sequences.count == Self.pinned.count)
        for key in Self.pinned.keys.sorted() { #expect(sequences[key] == Self.pinned[key], "\(key)") }
    }

    @Test(
        "a session that ended after it was told, its place in the open sessions taken by another, is passed over; the others get exactly what they were told"
    )
    func endedAfterTold() async throws {
        try await onLoopThread {
            let chat = PresenceAudienceTests.Fixture()
            let users = (0..<5).map { "u\($0)" }
            chat.join(users, "room")
            var peers: [MemoryLinkPeer] = []
            for user in users {
                let peer = MemoryLinkPeer()
                chat.server.adopt(peer.serverEnd)
                peer.logIn(user, readsPresenceBatches: user != "u3")
                peers.append(peer)
                try chat.settle()
            }
            let before = peers.map(\.received.count)
            let lastSession = try #require(chat.server.byUser["u4"]?.first)
            let placeOfFirst = try #require(chat.server.byUser["u1"]?.first).placeInOpen
            // Two ghosts' notices (users nobody knows, so no announcement of the server's own adds to
            // them), told to everyone in the room.
            var outbox = PresenceOutbox()
            outbox.add(.presence(of: "ghost", online: true), forSessionsOf: users, but: "ghost", in: chat.server.byUser)
            outbox.add(.presence(of: "spook", online: true), forSessionsOf: Array(users.reversed()), but: "u0", in: chat.server.byUser)
            peers[1].pair.apply(.reset)
            try chat.settle()
            try #require(chat.server.byUser["u1"] == nil)
            #expect(lastSession.placeInOpen == placeOfFirst, "the last session moved into the ended one's place")
            #expect(outbox.flush(to: chat.server.byUser) == 4, "four sessions written to, each once")
            for peer in peers { peer.settle() }
            let ghostly = peers.indices.map { index in
                peers[index].received.dropFirst(before[index]).compactMap(Self.describe).filter { $0.contains("ghost") || $0.contains("spook") }
            }
            #expect(ghostly == [["P ghost+"], [], ["B[ghost+ spook+]"], ["P ghost+", "P spook+"], ["B[ghost+ spook+]"]])
        }
    }

    @Test("every PRESENCE and PRESENCE_BATCH body is SwiftProtobuf's own encoding of its notices, within the frame limit")
    func canonicalBodies() async throws {
        let (_, frames) = try await crowd()
        #expect(frames.contains { $0.command == .presenceBatch } && frames.contains { $0.command == .presence })
        for frame in frames {
            #expect(frame.body.count <= 1_024)
            if frame.command == .presence {
                #expect(frame.body == (try frame.decode(IMPresenceNotice.self).serializedBytes()))
            } else {
                #expect(frame.body == (try frame.decode(IMPresenceBatch.self).serializedBytes()))
            }
        }
    }
}
