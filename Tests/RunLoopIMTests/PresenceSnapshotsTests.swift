import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// Issue 22: a snapshot of thousands of contacts online goes in pages, one per session per loop
/// pass, and each page reads the ledger as it is then.
@Suite("Presence snapshots")
struct PresenceSnapshotsTests {
    final class Session {}

    /// A ledger with `users` announced online.
    static func ledger(online users: [String]) -> PresenceLedger {
        var ledger = PresenceLedger()
        for user in users { _ = ledger.note(user) }
        _ = ledger.settle { _ in true }
        return ledger
    }

    @Test("a page holds at most its limit of the members online, not the user, and says where the next one starts")
    func page() {
        let ledger = Self.ledger(online: ["a", "b", "me", "d", "e"])
        let members = ["a", "offline", "b", "me", "d", "e"]
        let first = ledger.page(of: members, from: 0, for: "me", limit: 2)
        #expect(first.users == ["a", "b"])
        #expect(first.next == 3)
        let second = ledger.page(of: members, from: 3, for: "me", limit: 2)
        #expect(second.users == ["d", "e"])
        #expect(second.next == nil)
    }

    @Test("a page reads the ledger when it is made: a member announced offline since is left out")
    func pageReadsTheLedgerNow() {
        var ledger = Self.ledger(online: ["a", "b", "c"])
        let members = ["a", "b", "c"]
        _ = ledger.note("b")
        _ = ledger.settle { $0 != "b" }
        #expect(ledger.page(of: members, from: 0, for: "me", limit: 10).users == ["a", "c"])
    }

    @Test("each pass gives each recipient one page at most, until every snapshot is sent")
    func onePagePerRecipientPerPass() {
        let ledger = Self.ledger(online: (0..<7).map { "m\($0)" })
        let members = (0..<7).map { "m\($0)" }
        let (one, two) = (Session(), Session())
        var snapshots = PresenceSnapshots<Session>()
        let firstSchedules = snapshots.owe(one, of: "one", members: members, from: 3)
        let secondSchedules = snapshots.owe(two, of: "two", members: members, from: 0)
        #expect(firstSchedules && !secondSchedules)
        var pages: [[Int]] = []
        var more = true
        while more {
            let pass = snapshots.nextPages { ledger.page(of: $0, from: $1, for: $2, limit: 3) }
            pages.append(pass.pages.map(\.users.count))
            more = pass.more
        }
        #expect(pages == [[3, 3], [1, 3], [1]])
        #expect(snapshots.isEmpty)
    }

    @Test("a new snapshot replaces the one a recipient was still getting, and a recipient gone gets nothing")
    func replacedAndGone() {
        let ledger = Self.ledger(online: (0..<6).map { "m\($0)" })
        let members = (0..<6).map { "m\($0)" }
        let one = Session()
        var snapshots = PresenceSnapshots<Session>()
        _ = snapshots.owe(one, of: "one", members: members, from: 1)
        let replacementSchedules = snapshots.owe(one, of: "one", members: ["m5"], from: 0)
        #expect(!replacementSchedules)
        let pass = snapshots.nextPages { ledger.page(of: $0, from: $1, for: $2, limit: 3) }
        #expect(pass.pages.map(\.users) == [["m5"]])
        #expect(!pass.more)

        do {
            let gone = Session()
            _ = snapshots.owe(gone, of: "gone", members: members, from: 0)
        }
        let after = snapshots.nextPages { ledger.page(of: $0, from: $1, for: $2, limit: 3) }
        #expect(after.pages.isEmpty && !after.more && snapshots.isEmpty)
    }

    @Test("with everyone as the audience, a snapshot is its first page only: no rest is owed")
    func everyoneGetsTheFirstPage() {
        let ledger = Self.ledger(online: (0..<6).map { "m\($0)" })
        let snapshot = ledger.snapshot(of: .everyone, for: "m0", limit: 3)
        #expect(snapshot.users.count == 3 && snapshot.rest == nil)
        #expect(!snapshot.users.contains("m0"))
        let ofUsers = ledger.snapshot(of: .users((0..<6).map { "m\($0)" }), for: "m0", limit: 3)
        #expect(ofUsers.users == ["m1", "m2", "m3"] && ofUsers.rest?.next == 4)
    }

    @Test("a snapshot whose first page was all of it owes nothing, and drops the one it replaces")
    func completeAtOnce() {
        let one = Session()
        var snapshots = PresenceSnapshots<Session>()
        _ = snapshots.owe(one, of: "one", members: ["a", "b"], from: 1)
        let completeSchedules = snapshots.owe(one, of: "one", members: ["a"], from: nil)
        #expect(!completeSchedules)
        #expect(snapshots.isEmpty)
    }
}
