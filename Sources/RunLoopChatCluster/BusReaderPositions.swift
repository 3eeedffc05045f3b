/// The bus reader's decisions without a connection: where it reads each stream from, what an
/// `XREAD` reply moves, and which streams it fell behind in — after a reconnect or a reply whose
/// check shows trimmed entries.
///
/// Proving "missed nothing" (see ``StreamStatus/check(position:status:)``): on every connection the
/// reader asks `INFO server` for Redis's `run_id` and `XINFO STREAM` for each stream before it reads.
/// A different `run_id` is another Redis process: whatever it held unread before may be gone (it
/// restarted empty, or lost writes it had not saved), so every stream fell behind. Otherwise each
/// stream is checked from the reader's position. While connected, each stream an `XREAD` reply had
/// entries for is checked again from where that read began, because entries between that position and
/// the reply's first one may have been trimmed before the read reached Redis; a stream the reply did
/// not name had nothing after its position then, so it needs no check. A connection that ends before
/// such a check answered leaves that stream unproven: the next connection reports it behind.
struct BusReaderPositions: Sendable {
    /// Where each stream is read from (the last entry read, or where a reported gap ends); `nil`
    /// before the first connection.
    private(set) var positions: [StreamID]?
    /// The Redis process the positions were read from.
    private(set) var serverRunID: String?
    /// Per shard, where the reads whose check has not answered yet began.
    private(set) var unchecked: [Int: StreamID] = [:]

    let streamCount: Int
    /// Whether an attempt failed before the first connection: Redis was reachable to other nodes for
    /// a while before this reader started from the streams' ends.
    private var startedLate = false

    init(streamCount: Int) {
        self.streamCount = streamCount
    }

    /// A connection attempt failed.
    mutating func attemptFailed() {
        if positions == nil { startedLate = true }
    }

    /// A connection is up and answered the checks (`statuses[shard]`, `nil` for a missing stream):
    /// the first one starts each stream at its last id (no replay of older entries); later ones resume.
    /// Returns the shards the reader fell behind in: on the first connection none, unless attempts
    /// failed before it (what other nodes published meanwhile was never read), then all.
    mutating func connected(runID: String, statuses: [StreamStatus?]) -> [Int] {
        precondition(statuses.count == streamCount, "one status per stream")
        defer { serverRunID = runID }
        guard let old = positions else {
            positions = statuses.map { $0?.lastGenerated ?? .zero }
            return startedLate ? Array(0..<streamCount) : []
        }
        let sameServer = runID == serverRunID
        var behind: [Int] = []
        var resumed = old
        for shard in 0..<streamCount {
            let check = StreamStatus.check(position: old[shard], status: statuses[shard])
            switch check {
            case .reset: resumed[shard] = .zero
            case .trimmed: resumed[shard] = statuses[shard]!.resumePoint
            case .intact: break
            }
            if check != .intact || !sameServer || unchecked[shard] != nil { behind.append(shard) }
        }
        positions = resumed
        unchecked = [:]
        return behind
    }

    /// The entries of a reply were read: `shard`'s position moves to `last`, and the read waits for
    /// its check (``checked(shard:status:)``).
    mutating func read(shard: Int, through last: StreamID) {
        guard let from = positions?[shard], from < last else { return }
        unchecked[shard] = min(unchecked[shard] ?? from, from)
        positions![shard] = last
    }

    /// The check of a stream after a reply read it: whether the reader fell behind in it. A reset
    /// stream is read again from its start.
    mutating func checked(shard: Int, status: StreamStatus?) -> Bool {
        guard let from = unchecked.removeValue(forKey: shard) else { return false }
        let check = StreamStatus.check(position: from, status: status)
        if check == .reset { positions?[shard] = .zero }
        return check != .intact
    }

    /// The `XREAD` arguments that read on from every position.
    func readArguments(keys: [String], block: Duration, count: Int) -> [String] {
        let ids = (positions ?? Array(repeating: .zero, count: streamCount)).map(\.description)
        return ["XREAD", "COUNT", String(count), "BLOCK", String(block.wholeMilliseconds), "STREAMS"] + keys + ids
    }
}
