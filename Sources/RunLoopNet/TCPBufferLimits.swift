/// How much a ``TCPConnection`` buffers in each direction, and when it reports backpressure.
///
/// Output: once more than ``writeHighWaterMark`` bytes wait in the queue the connection stops being
/// writable (``TCPConnection/isWritable`` is false and ``TCPConnection/onWritabilityChanged`` says so);
/// it becomes writable again once the queue drains to ``writeLowWaterMark`` or less. A write that would
/// take the queue past ``writeLimit`` is refused with ``NetError/writeBufferFull(limit:)`` — the queue
/// never grows without bound, and an owner that ignores writability finds out with a typed error.
///
/// Input: bytes nobody has consumed yet (no ``TCPConnection/onData`` and no pending read request) are
/// kept up to ``inputLimit``; then the connection stops reading from the socket, so the kernel's window
/// closes and the peer slows down, until the bytes are consumed.
public struct TCPBufferLimits: Sendable, Equatable {
    /// Writability is lost above this many queued output bytes.
    public var writeHighWaterMark: Int
    /// Writability returns at or below this many queued output bytes.
    public var writeLowWaterMark: Int
    /// Hard limit of queued output bytes; writes beyond it are refused.
    public var writeLimit: Int
    /// Unconsumed input bytes kept before reading pauses.
    public var inputLimit: Int
    /// The most bytes taken from the socket in one `recv`.
    public var readChunkSize: Int

    public init(
        writeHighWaterMark: Int = 256 * 1024,
        writeLowWaterMark: Int = 64 * 1024,
        writeLimit: Int = 16 * 1024 * 1024,
        inputLimit: Int = 1024 * 1024,
        readChunkSize: Int = 64 * 1024
    ) {
        self.writeHighWaterMark = max(0, writeHighWaterMark)
        self.writeLowWaterMark = min(max(0, writeLowWaterMark), self.writeHighWaterMark)
        self.writeLimit = max(writeLimit, self.writeHighWaterMark)
        self.inputLimit = max(1, inputLimit)
        self.readChunkSize = max(512, readChunkSize)
    }
}
