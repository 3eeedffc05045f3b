extension Dictionary {
    /// Gives back the room of removed entries once those left fill at most a quarter of it: a
    /// Swift dictionary never shrinks by itself, so a table that held a crowd (19,000 users online,
    /// then gone) would keep its size for good. A rebuild happens only after three quarters of the
    /// entries went since the last one, so it costs O(1) per removal, spread out.
    mutating func shrinkIfSparse() {
        guard capacity > 64, count * 4 < capacity else { return }
        var smaller = Dictionary(minimumCapacity: count)
        for (key, value) in self { smaller[key] = value }
        self = smaller
    }
}
