/// Backpressure with hysteresis: not writable once more than the high water mark of output waits,
/// writable again at or below the low one — and each change told to the owner once, in order.
struct WritabilitySignal: Equatable {
    /// Whether the owner may keep producing.
    private(set) var isWritable = true
    /// What the owner was last told.
    private var reported = true

    /// Applies the water marks of `limits` to `queuedBytes`; true when the owner has a change to hear.
    mutating func update(queuedBytes: Int, limits: TCPBufferLimits) -> Bool {
        if isWritable && queuedBytes > limits.writeHighWaterMark {
            isWritable = false
        } else if !isWritable && queuedBytes <= limits.writeLowWaterMark {
            isWritable = true
        }
        return isWritable != reported
    }

    /// The change to tell the owner next, from then on counted as told; `nil` when it is up to date.
    mutating func nextReport() -> Bool? {
        guard reported != isWritable else { return nil }
        reported = isWritable
        return isWritable
    }
}
