import RunLoopKit

/// The DELIVER_ACKs of one loop pass, by user, until the server hands them to its store together: a
/// room of N members sends N acknowledgements per message, and a store that commits each call
/// (SQLite, PostgreSQL) would otherwise make N transactions of them. Pure value.
struct PendingAcknowledgements {
    /// Per user, the acknowledged seqs in the order they came.
    private(set) var seqsByUser: [String: [UInt64]] = [:]

    /// Notes `seqs` from `user`. Returns `true` for the first of a batch: the caller schedules its
    /// hand-over then, once per pass.
    mutating func add(_ seqs: [UInt64], for user: String) -> Bool {
        let isFirst = seqsByUser.isEmpty
        seqsByUser[user, default: []].append(contentsOf: seqs)
        return isFirst
    }

    /// The batch so far; empty afterwards.
    mutating func take() -> [String: [UInt64]] {
        defer { seqsByUser = [:] }
        return seqsByUser
    }
}

extension IMServer {
    /// A session's DELIVER_ACK: its window frees at once, and the store hears of it with every other
    /// acknowledgement of this pass, on the loop's next pass. An acknowledgement lost in between (a
    /// crash) only brings its messages again, which the client drops; a shutdown waits for the batch.
    func acknowledgementReceived(_ seqs: [UInt64], from user: String) {
        guard pendingAcknowledgements.add(seqs, for: user) else { return }
        // Not timed: the hand-over waits for the loop's next pass, not for the store.
        callStore(
            timed: nil,
            { answered in
                let handOver = { [weak self] in
                    self?.handOverAcknowledgements()
                    answered(())
                }
                do {
                    // The loop's own thread by construction: every session callback runs there.
                    try loop.performFromLoopThread(inModes: modes, label: "im.server acknowledgements", handOver)
                } catch {
                    handOver()
                }
            }, then: { _ in })
    }

    private func handOverAcknowledgements() {
        let batch = pendingAcknowledgements.take()
        if !batch.isEmpty { store.acknowledge(batch) }
    }
}
