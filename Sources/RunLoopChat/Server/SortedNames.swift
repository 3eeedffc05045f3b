/// Lists of user names each in UTF-8 byte order (SQLite's BINARY collation, PostgreSQL's "C": what
/// the stores' `ORDER BY user` gives), merged into one: each store's batch of contacts.
package enum SortedNames {
    /// The names of all `lists`, each once, in UTF-8 byte order, `excluded` not among them. Each list
    /// must be in that order with no name twice. One list is only filtered: a crowd whose one shared
    /// conversation is a room costs no merge.
    package static func union(_ lists: [[String]], without excluded: String) -> [String] {
        guard var merged = lists.first else { return [] }
        for list in lists.dropFirst() { merged = union(merged, list) }
        // In order and each once: the excluded name is found by halving, not by a comparison per name
        // (a login's audience in a room of 1,000).
        var (low, high) = (0, merged.count)
        while low < high {
            let middle = (low + high) / 2
            let step = order(merged[middle], excluded)
            if step == 0 {
                merged.remove(at: middle)
                break
            }
            if step < 0 { low = middle + 1 } else { high = middle }
        }
        return merged
    }

    private static func union(_ a: [String], _ b: [String]) -> [String] {
        var merged: [String] = []
        merged.reserveCapacity(a.count + b.count)
        var (i, j) = (0, 0)
        while i < a.count, j < b.count {
            let step = order(a[i], b[j])
            merged.append(step <= 0 ? a[i] : b[j])
            if step <= 0 { i += 1 }
            if step >= 0 { j += 1 }
        }
        merged += a[i...]
        merged += b[j...]
        return merged
    }

    /// Negative, zero or positive as `a`'s UTF-8 bytes sort before, as, or after `b`'s: SQLite's
    /// comparison, over the strings' own storage (the generic `utf8` sequence comparisons were a
    /// tenth of a crowd's departure).
    package static func order(_ a: String, _ b: String) -> Int {
        var (a, b) = (a, b)
        return a.withUTF8 { x in
            b.withUTF8 { y in
                for index in 0..<min(x.count, y.count) where x[index] != y[index] { return x[index] < y[index] ? -1 : 1 }
                return x.count - y.count
            }
        }
    }
}
