/// The bus's streams: how many, their keys, and which one an event goes to.
///
/// The shard is FNV-1a (64 bits) of the event's ordering key, modulo the count: stable across
/// processes and versions (Swift's `hashValue` is seeded anew in every process, so two nodes would
/// disagree), so every node publishes one conversation's events to one stream, where they keep their
/// `XADD` order. Changing the count moves conversations between streams: every node of a cluster must
/// use the same count.
struct StreamShards: Sendable, Equatable {
    /// The stream keys, shard 0 first: `keyspace.key("stream", "<shard>")`.
    let keys: [String]

    init(keyspace: ClusterKeyspace, count: Int) {
        precondition(count > 0, "a bus needs at least one stream")
        keys = (0..<count).map { keyspace.key("stream", String($0)) }
    }

    var count: Int { keys.count }

    /// The shard `event` is published to.
    func shard(of event: ClusterEvent) -> Int { shard(ofKey: event.orderingKey) }

    /// The shard of an ordering key.
    func shard(ofKey key: String) -> Int { Int(Self.fnv1a(key) % UInt64(keys.count)) }

    /// FNV-1a, 64 bits, over the key's UTF-8 bytes.
    static func fnv1a(_ key: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}
