/// The last `capacity` message keys seen, for de-duplication: membership in O(1), memory bounded.
///
/// A key leaves only when `capacity` newer ones arrived after it. Size it above the most messages that
/// can be resent to a client at once (its offline inbox plus one window): a duplicate older than that
/// would be delivered again.
struct RecentMessageIDs: Sendable {
    let capacity: Int
    private var members: Set<String> = []
    private var ring: [String] = []
    private var next = 0

    init(capacity: Int) {
        precondition(capacity > 0, "capacity must be positive")
        self.capacity = capacity
    }

    var count: Int { members.count }

    /// Records `key`; returns false if it was already there.
    mutating func insert(_ key: String) -> Bool {
        guard !members.contains(key) else { return false }
        if ring.count < capacity {
            ring.append(key)
        } else {
            members.remove(ring[next])
            ring[next] = key
            next = (next + 1) % capacity
        }
        members.insert(key)
        return true
    }

    func contains(_ key: String) -> Bool { members.contains(key) }
}
