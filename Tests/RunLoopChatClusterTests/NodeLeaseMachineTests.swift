import RunLoopKit
import Testing

@testable import RunLoopChatCluster

/// The lease's decisions on the manual clock's instants: no Redis, no timer.
@Suite("Node lease machine")
struct NodeLeaseMachineTests {
    let policy = NodeLeasePolicy(ttl: .seconds(9), refreshInterval: .seconds(3), retryInterval: .seconds(1), reapInterval: .seconds(9))
    let start = ManualClock().now

    /// A machine that joined under `epoch` at `start`, with the reap it asks for at once done.
    func held(epoch: UInt64 = 7) -> NodeLeaseMachine {
        var machine = NodeLeaseMachine(policy: policy)
        _ = machine.start(now: start)
        _ = machine.registered(id: 1, epoch: epoch, now: start)
        return machine
    }

    @Test("starting asks for one register at once and nothing more until it answers")
    func startRegisters() {
        var machine = NodeLeaseMachine(policy: policy)
        #expect(machine.start(now: start) == [.register(id: 1, keeping: 0)])
        #expect(machine.state == .joining)
        #expect(machine.isRegistering)
        #expect(machine.nextDeadline == nil)
        #expect(machine.due(now: start + .seconds(60)).isEmpty)
        #expect(machine.start(now: start).isEmpty)
    }

    @Test("a register that answers holds the epoch, reaps at once and refreshes a third of a lease after it was sent")
    func registeredHolds() {
        var machine = NodeLeaseMachine(policy: policy)
        _ = machine.start(now: start)
        let actions = machine.registered(id: 1, epoch: 7, now: start + .milliseconds(5))
        #expect(actions == [.report(.held(epoch: 7)), .reap])
        #expect(machine.state == .held(epoch: 7))
        #expect(machine.nextDeadline == start + .seconds(3))
        #expect(machine.due(now: start + .milliseconds(2_999)).isEmpty)
        #expect(machine.due(now: start + .seconds(3)) == [.refresh(id: 2, epoch: 7)])
    }

    @Test("each refresh extends the lease from when it was sent; reaping comes once per reap interval")
    func refreshesAndReaps() {
        var machine = held()
        var refreshes = 0
        var reaps = 0
        var now = start
        while now < start + .seconds(30) {
            now = machine.nextDeadline!
            for action in machine.due(now: now) {
                switch action {
                case .refresh(let id, _):
                    refreshes += 1
                    #expect(machine.refreshed(id: id, now: now + .milliseconds(10)).isEmpty)
                case .reap: reaps += 1
                default: Issue.record("unexpected \(action)")
                }
            }
        }
        #expect(machine.state == .held(epoch: 7))
        #expect(refreshes == 10)
        #expect(reaps == 3)
    }

    @Test("a refresh that finds the lease gone fences the node, which registers again keeping nothing it lost")
    func refusedRefreshFences() {
        var machine = held()
        let refresh = machine.due(now: start + .seconds(3))
        #expect(refresh == [.refresh(id: 2, epoch: 7)])
        let actions = machine.refreshRefused(id: 2, now: start + .seconds(3))
        #expect(actions == [.report(.fenced), .register(id: 3, keeping: 7)])
        #expect(machine.state == .fenced)
        #expect(machine.registered(id: 3, epoch: 9, now: start + .seconds(4)) == [.report(.held(epoch: 9))])
        #expect(machine.lastEpoch == 9)
    }

    @Test("failed refreshes retry after the retry interval, and the lease lapses at its time all the same")
    func lapsesWithoutRedis() {
        var machine = held()
        var now = start + .seconds(3)
        var lastID: UInt64 = 0
        for action in machine.due(now: now) {
            if case .refresh(let id, _) = action { lastID = id }
        }
        var fencedAt: LoopInstant?
        while fencedAt == nil, now < start + .seconds(20) {
            let actions = machine.refreshFailed(id: lastID, now: now)
            #expect(machine.nextDeadline! <= now + .seconds(1))
            now = machine.nextDeadline!
            for action in actions + machine.due(now: now) {
                switch action {
                case .refresh(let id, _): lastID = id
                case .report(.fenced): fencedAt = now
                default: break
                }
            }
        }
        #expect(fencedAt == start + .seconds(9))
        #expect(machine.state == .fenced)
        #expect(machine.isRegistering)
    }

    @Test("an answer to a command no longer awaited changes nothing")
    func staleAnswersIgnored() {
        var machine = held()
        _ = machine.due(now: start + .seconds(3))
        _ = machine.refreshRefused(id: 2, now: start + .seconds(3))
        #expect(machine.refreshed(id: 2, now: start + .seconds(3)).isEmpty)
        #expect(machine.registered(id: 1, epoch: 7, now: start + .seconds(3)).isEmpty)
        #expect(machine.state == .fenced)
        #expect(machine.registerFailed(id: 3, now: start + .seconds(4)).isEmpty)
        #expect(machine.nextDeadline == start + .seconds(5))
        #expect(machine.due(now: start + .seconds(5)) == [.register(id: 4, keeping: 7)])
    }

    @Test("a session script's lost lease counts only for the epoch held and when no register is awaited")
    func leaseLostFromASession() {
        var machine = held()
        #expect(machine.leaseLost(epoch: 6, now: start).isEmpty)
        _ = machine.connectionUp(now: start + .seconds(1))
        #expect(machine.leaseLost(epoch: 7, now: start + .seconds(1)).isEmpty)
        #expect(machine.state == .held(epoch: 7))
        _ = machine.registered(id: 2, epoch: 7, now: start + .seconds(1))
        #expect(machine.leaseLost(epoch: 7, now: start + .seconds(2)) == [.report(.fenced), .register(id: 3, keeping: 7)])
    }

    @Test("a new connection re-registers at once under the epoch held; keeping it reports nothing")
    func reconnectReregisters() {
        var machine = held()
        #expect(machine.connectionUp(now: start + .seconds(1)) == [.register(id: 2, keeping: 7)])
        #expect(machine.due(now: start + .seconds(3)).isEmpty, "no refresh while the register is awaited")
        #expect(machine.registered(id: 2, epoch: 7, now: start + .seconds(1)).isEmpty)
        #expect(machine.nextDeadline == start + .seconds(4))
    }

    @Test("a re-register that comes back under a new epoch reports the lost lease before the new one")
    func reregisterUnderNewEpoch() {
        var machine = held()
        _ = machine.connectionUp(now: start + .seconds(1))
        #expect(machine.registered(id: 2, epoch: 8, now: start + .seconds(1)) == [.report(.fenced), .report(.held(epoch: 8))])
    }

    @Test("a reconnect during a register that then fails registers again at once, not after the retry")
    func reconnectDuringRegister() {
        var machine = held()
        _ = machine.connectionUp(now: start + .seconds(1))
        #expect(machine.connectionUp(now: start + .seconds(2)).isEmpty)
        #expect(machine.registerFailed(id: 2, now: start + .seconds(2)) == [.register(id: 3, keeping: 7)])
    }

    @Test("leaving reports it once and nothing is due after")
    func leaving() {
        var machine = held()
        #expect(machine.leave() == [.report(.left)])
        #expect(machine.leave().isEmpty)
        #expect(machine.nextDeadline == nil)
        #expect(machine.due(now: start + .seconds(60)).isEmpty)
        #expect(machine.connectionUp(now: start + .seconds(60)).isEmpty)
    }
}
