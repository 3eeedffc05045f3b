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

    @Test("inboxes: in seq order, until acknowledged; rooms reach every member but the sender", arguments: Kind.allCases)
    func inboxes(kind: Kind) throws {
        let fixture = try Fixture(kind)
        for user in ["alice", "bob", "carol"] { try fixture.join("lobby", user) }
        for index in 0..<5 {
            _ = fixture.store.store(Self.message("r\(index)", to: .room("lobby"), text: "\(index)"), from: "alice", nowMilliseconds: 1)
        }
        let bob = try fixture.store.undelivered(for: "bob")
        #expect(bob.map(\.text) == ["0", "1", "2", "3", "4"] && bob.allSatisfy { $0.recipient == .room("lobby") && $0.from == "alice" })
        #expect(try fixture.store.undelivered(for: "alice").isEmpty)
        fixture.store.acknowledge([bob[0].seq, bob[2].seq], for: "bob")
        #expect(try fixture.store.undelivered(for: "bob").map(\.text) == ["1", "3", "4"])
        #expect(try fixture.store.undelivered(for: "carol").count == 5)
        #expect(fixture.store.store(Self.message("x", to: .room("lobby")), from: "mallory", nowMilliseconds: 1) == .refused(.unknownRecipient))
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
