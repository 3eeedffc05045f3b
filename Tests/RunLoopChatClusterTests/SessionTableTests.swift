import Testing

@testable import RunLoopChatCluster

/// The per-user decisions of a node's session counts, with plain numbers as the logins' tokens.
@Suite("Session table")
struct SessionTableTests {
    typealias Table = SessionTable<Int>

    /// The scripts and answers among `actions`.
    func split(_ actions: [Table.Action]) -> (sent: [SessionSync], answers: [Int: SessionAdmission]) {
        var sent: [SessionSync] = []
        var answers: [Int: SessionAdmission] = [:]
        for action in actions {
            switch action {
            case .send(let sync): sent.append(sync)
            case .answer(let token, let admission): answers[token] = admission
            }
        }
        return (sent, answers)
    }

    @Test("an open asks Redis to set the user's count one higher, within the limit, and counts once admitted")
    func openAdmitted() {
        var table = Table()
        let (sent, answers) = split(table.open("ann", limit: 3, token: 1, remote: .up))
        #expect(sent == [SessionSync(user: "ann", base: 0, want: 1, limit: 3)])
        #expect(answers.isEmpty)
        #expect(table.counts.isEmpty)
        let done = split(table.synced("ann", .applied(total: 2), remote: .up))
        #expect(done.answers == [1: .admitted(clusterTotal: 2)])
        #expect(done.sent.isEmpty)
        #expect(table.counts == ["ann": 1])
    }

    @Test("a refused open leaves the count and answers the cluster's total")
    func openRefused() {
        var table = Table()
        _ = table.open("ann", limit: 2, token: 1, remote: .up)
        let done = split(table.synced("ann", .refused(total: 2), remote: .up))
        #expect(done.answers == [1: .refused(clusterTotal: 2)])
        #expect(table.counts.isEmpty)
    }

    @Test("opens of one user go one at a time, each from the count the one before left")
    func oneAtATime() {
        var table = Table()
        _ = table.open("ann", limit: 3, token: 1, remote: .up)
        #expect(split(table.open("ann", limit: 3, token: 2, remote: .up)).sent.isEmpty)
        #expect(split(table.open("bob", limit: 3, token: 3, remote: .up)).sent.count == 1, "another user does not wait")
        let next = split(table.synced("ann", .applied(total: 1), remote: .up))
        #expect(next.sent == [SessionSync(user: "ann", base: 1, want: 2, limit: 3)])
        #expect(next.answers == [1: .admitted(clusterTotal: 1)])
    }

    @Test("this node's own count at the limit refuses without asking Redis")
    func localLimitFirst() {
        var table = Table()
        _ = table.open("ann", limit: 1, token: 1, remote: .up)
        _ = table.synced("ann", .applied(total: 1), remote: .up)
        let refused = split(table.open("ann", limit: 1, token: 2, remote: .up))
        #expect(refused.sent.isEmpty)
        #expect(refused.answers == [2: .refused(clusterTotal: 1)])
    }

    @Test("a close while an open is in flight is written after the open's answer, as the absolute count")
    func closeDuringOpen() {
        var table = Table()
        _ = table.open("ann", limit: 3, token: 1, remote: .up)
        _ = table.synced("ann", .applied(total: 1), remote: .up)
        _ = table.open("ann", limit: 3, token: 2, remote: .up)
        #expect(split(table.close("ann", remote: .up)).sent.isEmpty)
        let next = split(table.synced("ann", .applied(total: 2), remote: .up))
        #expect(next.sent == [SessionSync(user: "ann", base: 1, want: 1, limit: nil)])
        #expect(table.counts == ["ann": 1])
        #expect(split(table.synced("ann", .applied(total: 1), remote: .up)).sent.isEmpty)
        #expect(!table.isDirty("ann"))
    }

    @Test("with Redis down a node admits on its own count up to the limit and remembers to write it")
    func downDecidesLocally() {
        var table = Table()
        let first = split(table.open("ann", limit: 2, token: 1, remote: .down))
        let second = split(table.open("ann", limit: 2, token: 2, remote: .down))
        let third = split(table.open("ann", limit: 2, token: 3, remote: .down))
        #expect(first.sent.isEmpty && second.sent.isEmpty && third.sent.isEmpty)
        #expect(first.answers == [1: .admitted(clusterTotal: nil)])
        #expect(second.answers == [2: .admitted(clusterTotal: nil)])
        #expect(third.answers == [3: .refused(clusterTotal: 2)])
        #expect(table.isDirty("ann"))
        #expect(split(table.flush(remote: .up)).sent == [SessionSync(user: "ann", base: 2, want: 2, limit: nil)])
    }

    @Test("a script that failed decides its open here and writes the count only at the next flush")
    func failureDecidesLocally() {
        var table = Table()
        _ = table.open("ann", limit: 2, token: 1, remote: .up)
        let failed = split(table.failed("ann", remote: .up))
        #expect(failed.answers == [1: .admitted(clusterTotal: nil)])
        #expect(failed.sent.isEmpty)
        #expect(table.isDirty("ann"))
        #expect(split(table.flush(remote: .up)).sent == [SessionSync(user: "ann", base: 1, want: 1, limit: nil, announce: true)])
        _ = table.synced("ann", .applied(total: 1), remote: .up)
        #expect(table.flush(remote: .up).isEmpty, "announced once")
    }

    @Test("a failure sends the user's next waiting open at once: a login never waits for a flush")
    func failureSendsWaitingOpen() {
        var table = Table()
        _ = table.open("ann", limit: 3, token: 1, remote: .up)
        _ = table.open("ann", limit: 3, token: 2, remote: .up)
        let failed = split(table.failed("ann", remote: .up))
        #expect(failed.answers == [1: .admitted(clusterTotal: nil)])
        #expect(failed.sent == [SessionSync(user: "ann", base: 1, want: 2, limit: 3, announce: true)])
    }

    @Test("opens wait while a register is awaited, then go to Redis, or are decided here if it failed")
    func registering() {
        var table = Table()
        #expect(split(table.open("ann", limit: 2, token: 1, remote: .registering)).sent.isEmpty)
        #expect(split(table.flush(remote: .up)).sent == [SessionSync(user: "ann", base: 0, want: 1, limit: 2)])

        var failing = Table()
        _ = failing.open("bob", limit: 2, token: 2, remote: .registering)
        #expect(split(failing.flush(remote: .down)).answers == [2: .admitted(clusterTotal: nil)])
    }

    @Test("a user whose script failed is announced by a later one even when a register wrote its count")
    func unannouncedOutlivesRegister() {
        var table = Table()
        _ = table.open("ann", limit: 2, token: 1, remote: .up)
        _ = table.failed("ann", remote: .up)
        #expect(table.registerSnapshot() == ["ann": 1])
        #expect(split(table.flush(remote: .up)).sent == [SessionSync(user: "ann", base: 1, want: 1, limit: nil, announce: true)])
    }

    @Test("after a register whose answer was lost, every user counted here is announced once")
    func registerAnswerLost() {
        var table = Table()
        _ = table.open("ann", limit: 2, token: 1, remote: .down)
        _ = table.open("bob", limit: 2, token: 2, remote: .down)
        #expect(table.registerSnapshot() == ["ann": 1, "bob": 1])
        table.registerAnswerLost()
        let announced = split(table.flush(remote: .up)).sent
        #expect(announced.map(\.user) == ["ann", "bob"] && announced.allSatisfy(\.announce))
    }

    @Test("a register's snapshot settles every user but one whose script is still in flight")
    func snapshot() {
        var table = Table()
        _ = table.open("ann", limit: 2, token: 1, remote: .down)
        _ = table.open("bob", limit: 2, token: 2, remote: .up)
        #expect(table.registerSnapshot() == ["ann": 1])
        #expect(!table.isDirty("ann"))
        _ = table.synced("bob", .applied(total: 1), remote: .registering)
        #expect(table.isDirty("bob"))
        #expect(split(table.flush(remote: .up)).sent == [SessionSync(user: "bob", base: 1, want: 1, limit: nil)])
    }

    @Test("a close of a user with no session changes nothing")
    func strayClose() {
        var table = Table()
        #expect(table.close("ann", remote: .up).isEmpty)
        #expect(!table.isDirty("ann"))
    }
}
