import Logging
import RunLoopNet
import RunLoopRedis

/// Reaping: finding registered nodes whose lease is gone and removing their counts. Every step is a
/// read or an epoch-guarded script, so two nodes reaping at once, or a step whose answer was lost,
/// reap each dead node once, and its users are reported offline once, by the reaper.
///
/// The one gap: a reap whose answer was lost (Redis slower than the command timeout) reported nobody,
/// and a later run finds the node gone. Keeping the reaped users for a second run to report would
/// make two reapers report them twice; presence readers that must never miss an offline user can
/// read the totals hash (``PresenceKeys/totals``), which is always right.
extension NodePresence {
    /// Reads the registry, then the leases of the other nodes in it, and retires each node whose lease
    /// is gone under the epoch the registry named.
    func reap() {
        readKeys(["HGETALL", keys.registry], "registry read") { [weak self] reply in
            guard let self, let entries = reply.array else { return }
            let registered: [(node: String, epoch: String)] = stride(from: 0, to: entries.count - 1, by: 2).compactMap { index in
                guard let node = entries[index].string, let epoch = entries[index + 1].string, node != self.nodeID else { return nil }
                return (node, epoch)
            }
            guard !registered.isEmpty else { return }
            self.readKeys(["MGET"] + registered.map { self.keys.lease($0.node) }, "lease read") { [weak self] leases in
                guard let self, let leases = leases.array, leases.count == registered.count else { return }
                for (entry, lease) in zip(registered, leases) where lease == .null {
                    guard let epoch = UInt64(entry.epoch) else { continue }
                    self.retire(entry.node, epoch: epoch, mode: "reap") { _ in }
                }
            }
        }
    }

    /// Runs the retire script for `node` under `epoch` (`mode` `reap` or `leave`), reports what it
    /// changed, and hands the answer to `completion` (`nil` when it failed).
    func retire(_ node: String, epoch: UInt64, mode: String, completion: @escaping (RetireAnswer?) -> Void) {
        runScript(.retire, keys: [keys.registry, keys.totals, keys.lease(node), keys.sessions(node)], arguments: [node, "\(epoch)", mode]) {
            [weak self] result in
            guard let self else { return completion(nil) }
            let answer = self.decode(result, RetireAnswer.init, "retire")
            if let answer, answer.retired {
                if node == self.nodeID {
                    self.report(online: [], offline: answer.offline, cause: .left)
                } else {
                    self.logger.notice(
                        "reaped a node whose lease lapsed", metadata: ["node": "\(node)", "epoch": "\(epoch)", "offline": "\(answer.offline.count)"])
                    self.tell(.presence(PresenceChange(online: [], offline: answer.offline, cause: .reaped(node: node, epoch: epoch))))
                }
            }
            completion(answer)
        }
    }

    /// A plain command whose reply `handle` gets; a failure is logged and ends the reap (the next one
    /// comes an interval later).
    private func readKeys(_ command: [String], _ what: String, handle: @escaping (RedisReply) -> Void) {
        guard let connection = link.connection else { return }
        connection.send(command, timeout: policy.commandTimeout) { [weak self] result in
            if let reply = self?.decode(result, { $0 }, what) { handle(reply) }
        }
    }
}
