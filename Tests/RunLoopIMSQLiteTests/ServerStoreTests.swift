import RunLoopTesting
import Testing

@testable import RunLoopChat
@testable import RunLoopIM
@testable import RunLoopIMCore
@testable import RunLoopIMSQLite

/// The four rules every ``IMServerStore`` keeps, checked against each implementation.
@Suite("Server stores")
struct ServerStoreTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case memory, sqlite
        var testDescription: String { rawValue }
    }

    final class Fixture {
        let store: any SynchronousChatStore
        let path: String?
        init(_ kind: Kind, accounts: [String: String]? = nil) throws {
            switch kind {
            case .memory:
                store = InMemoryIMStore(accounts: accounts)
                path = nil
            case .sqlite:
                let path = temporaryPath("store.db")
                store = try SQLiteIMStore(path: path, accounts: accounts)
                self.path = path
            }
        }
        func join(_ room: String, _ user: String) throws {
            _ = try store.join(room: room, user: user).get()
        }
        deinit { if let path { removeDatabase(path) } }
    }

    static func message(_ id: String, to recipient: IMRecipient, text: String = "t") -> IMMessage {
        IMMessage(id: id, from: "", recipient: recipient, text: text, seq: 0, sentAtMilliseconds: 0)
    }

    @Test("storing is idempotent per (sender, id): a resend gets the first seq and is not new", arguments: Kind.allCases)
    func idempotent(kind: Kind) throws {
        let fixture = try Fixture(kind)
        let first = fixture.store.store(Self.message("a", to: .user("bob")), from: "alice", nowMilliseconds: 1)
        let again = fixture.store.store(Self.message("a", to: .user("bob")), from: "alice", nowMilliseconds: 2)
        let otherSender = fixture.store.store(Self.message("a", to: .user("bob")), from: "carol", nowMilliseconds: 3)
        guard case .stored(let stored, let recipients, true) = first, case .stored(let repeated, _, false) = again,
            case .stored(let other, _, true) = otherSender
        else {
            Issue.record("\(first) \(again) \(otherSender)")
            return
        }
        #expect(recipients == ["bob"] && stored.from == "alice" && stored.sentAtMilliseconds == 1)
        #expect(repeated.seq == stored.seq && other.seq > stored.seq)
        #expect(try fixture.store.undelivered(for: "bob").map(\.seq) == [stored.seq, other.seq])
    }

    @Test("an abandoned id is refused forever; a stored one is reported accepted", arguments: Kind.allCases)
    func abandon(kind: Kind) throws {
        let fixture = try Fixture(kind)
        _ = fixture.store.store(Self.message("kept", to: .user("bob")), from: "alice", nowMilliseconds: 1)
        let results = try fixture.store.abandon(["kept", "gone"], from: "alice").get()
        #expect(results.map(\.id) == ["kept", "gone"] && results[0].storedSeq ?? 0 > 0 && results[1].storedSeq == nil)
        #expect(fixture.store.store(Self.message("gone", to: .user("bob")), from: "alice", nowMilliseconds: 2) == .refused(.badRequest))
        #expect(try fixture.store.undelivered(for: "bob").count == 1)
    }

    @Test("inboxes: in order, until acknowledged, cumulatively per conversation; rooms reach every member but the sender", arguments: Kind.allCases)
    func inboxes(kind: Kind) throws {
        let fixture = try Fixture(kind)
        for user in ["alice", "bob", "carol"] { try fixture.join("lobby", user) }
        for index in 0..<5 {
            _ = fixture.store.store(Self.message("r\(index)", to: .room("lobby"), text: "\(index)"), from: "alice", nowMilliseconds: 1)
        }
        let bob = try fixture.store.undelivered(for: "bob")
        #expect(bob.map(\.text) == ["0", "1", "2", "3", "4"] && bob.allSatisfy { $0.recipient == .room("lobby") && $0.from == "alice" })
        #expect(try fixture.store.undelivered(for: "alice").isEmpty)
        fixture.store.acknowledge([bob[0].seq], for: "bob")
        #expect(try fixture.store.undelivered(for: "bob").map(\.text) == ["1", "2", "3", "4"])
        fixture.store.acknowledge([bob[2].seq], for: "bob")
        #expect(try fixture.store.undelivered(for: "bob").map(\.text) == ["3", "4"], "acknowledging 2 acknowledges 0 and 1 too")
        fixture.store.acknowledge([bob[1].seq], for: "bob")
        #expect(try fixture.store.undelivered(for: "bob").map(\.text) == ["3", "4"], "a cursor never moves back")
        #expect(try fixture.store.undelivered(for: "carol").count == 5)
        #expect(fixture.store.store(Self.message("x", to: .room("lobby")), from: "mallory", nowMilliseconds: 1) == .refused(.unknownRecipient))
    }

    @Test("several users' acknowledgements at once move each one's cursor, as one call each would", arguments: Kind.allCases)
    func acknowledgementBatch(kind: Kind) throws {
        let fixture = try Fixture(kind)
        for user in ["alice", "bob", "carol"] { try fixture.join("lobby", user) }
        for index in 0..<3 {
            _ = fixture.store.store(Self.message("r\(index)", to: .room("lobby"), text: "\(index)"), from: "alice", nowMilliseconds: 1)
        }
        let sent = try fixture.store.undelivered(for: "bob")
        fixture.store.acknowledge(["bob": [sent[0].seq, sent[2].seq], "carol": [sent[1].seq, UInt64.max]])
        #expect(try fixture.store.undelivered(for: "bob").isEmpty)
        #expect(try fixture.store.undelivered(for: "carol").map(\.text) == ["2"], "a seq no message has is passed over")
    }

    @Test(
        "conversations number their messages 1, 2, 3 whichever of two users writes; rooms apart; the inbox comes a conversation at a time",
        arguments: Kind.allCases)
    func conversationNumbers(kind: Kind) throws {
        let fixture = try Fixture(kind)
        for user in ["alice", "bob"] { try fixture.join("lobby", user) }
        var numbers: [String: UInt64] = [:]
        for (id, sender, recipient) in [
            ("d1", "alice", IMRecipient.user("bob")), ("r1", "alice", .room("lobby")), ("d2", "bob", .user("alice")),
            ("d3", "alice", .user("bob")), ("r2", "alice", .room("lobby"))
        ] {
            guard case .stored(let stored, _, true) = fixture.store.store(Self.message(id, to: recipient, text: id), from: sender, nowMilliseconds: 1)
            else {
                Issue.record("\(id) not stored")
                return
            }
            numbers[id] = stored.conversationSeq
        }
        #expect(numbers == ["d1": 1, "d2": 2, "d3": 3, "r1": 1, "r2": 2])
        let bob = try fixture.store.undelivered(for: "bob")
        #expect(
            bob.map(\.text) == ["r1", "r2", "d1", "d3"], "the room (created by the joins), then the direct conversation; his own d2 is no delivery")
        #expect(bob.map(\.conversationSeq) == [1, 2, 1, 3])
        let window = try fixture.store.undelivered(for: "bob", after: [.direct(between: "bob", and: "alice"): 1, .room("lobby"): 1], limit: 10).get()
        #expect(window.map(\.text) == ["r2", "d3"], "what the session sent already is skipped, per conversation")
        #expect(try fixture.store.undelivered(for: "bob", after: [:], limit: 3).get().map(\.text) == ["r1", "r2", "d1"])
        #expect(try fixture.store.undelivered(for: "alice").map(\.text) == ["d2"], "a sender caught up stays caught up; bob's reply waits")
    }

    @Test("a joiner starts at the room's last message (history shows older ones); a sender behind keeps their backlog", arguments: Kind.allCases)
    func cursorsOnJoinAndSend(kind: Kind) throws {
        let fixture = try Fixture(kind)
        try fixture.join("lobby", "alice")
        try fixture.join("lobby", "bob")
        _ = fixture.store.store(Self.message("before", to: .room("lobby"), text: "before"), from: "alice", nowMilliseconds: 1)
        try fixture.join("lobby", "carol")
        _ = fixture.store.store(Self.message("after", to: .room("lobby"), text: "after"), from: "alice", nowMilliseconds: 1)
        #expect(try fixture.store.undelivered(for: "carol").map(\.text) == ["after"])
        let history = try fixture.store.history(HistoryQuery(conversation: .room("lobby"), before: 0), for: "carol", limit: 10).get()
        #expect(history.messages.map(\.text) == ["after", "before"])
        // bob has not acknowledged "before" and "after": his own message leaves his backlog where it was.
        _ = fixture.store.store(Self.message("reply", to: .room("lobby"), text: "reply"), from: "bob", nowMilliseconds: 1)
        #expect(try fixture.store.undelivered(for: "bob").map(\.text) == ["before", "after"])
        #expect(try fixture.store.undelivered(for: "alice").map(\.text) == ["reply"])
        guard
            case .stored(let again, let waiting, false) = fixture.store.store(
                Self.message("before", to: .room("lobby")), from: "alice", nowMilliseconds: 2)
        else {
            Issue.record("resend not recognised")
            return
        }
        #expect(again.conversationSeq == 1 && waiting == ["bob"], "a resend names the members who have not acknowledged it")
    }

    @Test("accounts: wrong passwords refused; unknown recipients refused", arguments: Kind.allCases)
    func accounts(kind: Kind) throws {
        let fixture = try Fixture(kind, accounts: ["alice": "a", "bob": "b"])
        #expect(
            fixture.store.authenticate(IMLoginAttempt(user: "alice", password: "nope"))
                == .refused(.authenticationFailed, reason: "unknown user or wrong password"))
        #expect(fixture.store.authenticate(IMLoginAttempt(user: "alice", password: "a")) == .accepted)
        #expect(fixture.store.store(Self.message("1", to: .user("ghost")), from: "alice", nowMilliseconds: 1) == .refused(.unknownRecipient))
        #expect(fixture.store.store(Self.message("", to: .user("bob")), from: "alice", nowMilliseconds: 1) == .refused(.badRequest))
    }

    @Test("SQLite: everything survives closing and reopening the file")
    func sqlitePersists() throws {
        let path = temporaryPath("persist.db")
        defer { removeDatabase(path) }
        var seq: UInt64 = 0
        do {
            let store = try SQLiteIMStore(path: path)
            if case .stored(let stored, _, _) = store.store(Self.message("m", to: .user("bob")), from: "alice", nowMilliseconds: 5) {
                seq = stored.seq
            }
            _ = store.abandon(["never"], from: "alice")
            store.database.close()
        }
        let reopened = try SQLiteIMStore(path: path)
        #expect(try reopened.undelivered(for: "bob").map(\.seq) == [seq])
        guard case .stored(let again, _, false) = reopened.store(Self.message("m", to: .user("bob")), from: "alice", nowMilliseconds: 9) else {
            Issue.record("resend after reopen was not recognised")
            return
        }
        #expect(again.seq == seq && again.sentAtMilliseconds == 5)
        #expect(reopened.store(Self.message("never", to: .user("bob")), from: "alice", nowMilliseconds: 9) == .refused(.badRequest))
        var mode = ""
        try reopened.database.query("PRAGMA journal_mode") { row in mode = row.text(0) ?? "" }
        #expect(mode == "wal")
    }

    @Test("SQLite: a file that cannot be opened is a typed error")
    func sqliteBadPath() {
        #expect(throws: SQLiteError.self) { try SQLiteIMStore(path: "/nonexistent-dir/x/store.db") }
    }
}
