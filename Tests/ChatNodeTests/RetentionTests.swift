import ChatNodeKit
import Logging
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite
import RunLoopKit
import RunLoopTesting
import Testing

/// `serve --keep-days`: sweeps of small batches on the loop's timers, and what a node deletes.
@Suite("History retention")
struct RetentionTests {
    @Test("batches follow each other after the pause, sweeps after the interval, a failure after its wait; each sweep counts back from its start")
    func schedule() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let clock = ManualClock()
            try loop.setClock(.manual(clock))
            let start = clock.now
            var policy = HistoryRetentionPolicy(keep: .seconds(10))
            policy.batchSize = 3
            policy.batchPause = .milliseconds(20)
            policy.sweepInterval = .seconds(3600)
            policy.retryAfterFailure = .seconds(60)
            // Wall time follows the manual clock: 100 s at the start.
            policy.wallClock = { 100_000 + UInt64((clock.now - start).components.seconds) * 1000 }
            var answers: [Result<HistoryPruneBatch, IMStoreFailure>] = [
                .success(HistoryPruneBatch(deleted: 3, lastExamined: 3, isSweepDone: false)),
                .success(HistoryPruneBatch(deleted: 1, lastExamined: 7, isSweepDone: true)),
                .failure(IMStoreFailure("prune history", reason: "disk on fire")),
                .success(HistoryPruneBatch(deleted: 0, lastExamined: 9, isSweepDone: true))
            ]
            var asked: [(at: Duration, cutoff: UInt64, after: UInt64, limit: Int)] = []
            let retention = HistoryRetention(policy: policy, loop: loop, logger: Logger(label: "test")) { cutoff, after, limit, completion in
                asked.append((clock.now - start, cutoff, after, limit))
                completion(answers.removeFirst())
            }
            retention.start()
            // The clock jumps from timer to timer: an hour of sweeps in a moment.
            try loop.run(.default, timeout: .seconds(3700))
            try #require(asked.count == 4)
            retention.stop()
            #expect(asked.map(\.at) == [.zero, .milliseconds(20), .seconds(3600) + .milliseconds(20), .seconds(3660) + .milliseconds(20)])
            #expect(asked.map(\.after) == [0, 3, 0, 0], "a sweep goes on after the last examined; a new one starts from the first")
            #expect(asked.map(\.cutoff) == [90_000, 90_000, 3_690_000, 3_750_000])
            #expect(asked.allSatisfy { $0.limit == 3 })
            try loop.run(.default, timeout: .seconds(7200))
            #expect(asked.count == 4, "stopped: no more batches")
        }
    }

    @Test("a node with retention deletes acknowledged history past the cutoff and keeps what an offline user is owed")
    func nodeDeletesOldHistory() async throws {
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        try await onLoopThread {
            let loop = RunLoop.current
            let first = try ChatNode(configuration: nodeConfiguration(path))
            try first.start()
            let store = try #require(first.sqliteStore)
            for user in ["alice", "bob", "carol"] { _ = try first.addAccount(user: user, password: "pw") }
            _ = try store.join(room: "hall", user: "alice").get()
            _ = try store.join(room: "hall", user: "bob").get()
            for (id, recipient) in [("read", IMRecipient.room("hall")), ("owed", .user("carol"))] {
                let message = IMMessage(id: id, from: "", recipient: recipient, text: id, seq: 0, sentAtMilliseconds: 0)
                _ = store.store(message, from: "alice", nowMilliseconds: 1_000)
            }
            store.acknowledge(try store.undelivered(for: "bob").map(\.seq), for: "bob")
            try first.stopGracefully()

            var configuration = nodeConfiguration(path)
            var policy = HistoryRetentionPolicy(keep: .seconds(86_400))
            policy.wallClock = { 1_000 + 86_400_000 + 1 }
            configuration.retention = policy
            let node = try ChatNode(configuration: configuration)
            try node.start()
            defer { node.abort() }
            let kept = try #require(node.sqliteStore)
            try #require(try spin(loop) { (try? kept.storedCount()) == 1 })
            #expect(try kept.undelivered(for: "carol").map(\.id) == ["owed"])
        }
    }
}
