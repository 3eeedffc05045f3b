extension Array {
    /// Empties the array, keeping its storage for the next use only while it holds at most `limit`
    /// elements. A scratch list refilled every pass keeps its room, so a steady load allocates
    /// nothing; one that a crowd grew to thousands (a pass that read 19,000 closed connections) gives
    /// that room back instead of holding it for good, at the cost of one allocation in a pass that
    /// wide.
    package mutating func removeAll(keepingCapacityUpTo limit: Int) {
        guard capacity <= limit else { return removeAll() }
        // Emptied from the end, keeping the storage: `removeAll(keepingCapacity:)` is a generic range
        // replacement, a hundred instructions for the one block of a cross-thread hand-off.
        while popLast() != nil {}
    }
}
