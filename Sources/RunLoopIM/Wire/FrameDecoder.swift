/// Reassembles frames from a byte stream by their length prefix, whatever the read sizes were.
///
/// A pure value: feed it bytes with ``append(_:)``, take frames with ``next()``. It checks each header
/// as soon as its 16 bytes are in — an oversized length or an unknown version fails before a byte of
/// the body is buffered — so a hostile peer can make it hold at most one header plus one body within
/// ``maxBodyLength``. After an error the stream is unusable (there is no way to find the next frame
/// boundary): close the connection.
public struct FrameDecoder: Sendable {
    /// The largest body accepted, in bytes.
    public private(set) var maxBodyLength: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var failure: IMFrameError?

    /// - Parameter maxBodyLength: the largest body accepted (default 64 KiB); at most `UInt32.max`.
    public init(maxBodyLength: Int = 64 * 1024) {
        // The header's length field is 32 bits: a larger limit means nothing, and would overflow the
        // buffer arithmetic below (found by the fuzzing work: Int.max / 4 trapped).
        precondition((0...Int(UInt32.max)).contains(maxBodyLength), "maxBodyLength must be 0...UInt32.max")
        self.maxBodyLength = maxBodyLength
    }

    /// Accepts bodies up to `limit` from now on, also for bytes already buffered (a client raises
    /// its limit to the one the server announced at login, in the middle of a read). Never lowers it.
    public mutating func raiseMaxBodyLength(to limit: Int) {
        precondition(limit <= Int(UInt32.max), "maxBodyLength must be 0...UInt32.max")
        maxBodyLength = max(maxBodyLength, limit)
    }

    /// Bytes received and not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds received bytes.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard failure == nil else { return }
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame, or `nil` until more bytes arrive.
    /// - Throws: ``IMFrameError/frameTooLarge(length:limit:)`` or ``IMFrameError/unsupportedVersion(_:)``;
    ///   the same error again on every later call.
    public mutating func next() throws(IMFrameError) -> IMFrame? {
        if let failure { throw failure }
        guard buffer.count - start >= FrameHeader.size else { return nil }
        let header = buffer.withUnsafeBytes { FrameHeader(reading: $0, at: start) }
        if header.version != FrameHeader.currentVersion {
            return try fail(.unsupportedVersion(header.version))
        }
        if Int(header.bodyLength) > maxBodyLength {
            return try fail(.frameTooLarge(length: header.bodyLength, limit: maxBodyLength))
        }
        let end = start + FrameHeader.size + Int(header.bodyLength)
        guard buffer.count >= end else { return nil }
        let body = Array(buffer[(start + FrameHeader.size)..<end])
        start = end
        compactIfWorthIt()
        return IMFrame(header: header, body: body)
    }

    private mutating func fail(_ error: IMFrameError) throws(IMFrameError) -> IMFrame? {
        failure = error
        buffer = []
        start = 0
        throw error
    }

    /// Drops consumed bytes once they are the larger part of the buffer, so memory stays bounded by
    /// what is unread while each byte is moved O(1) times on average.
    private mutating func compactIfWorthIt() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 4 * (FrameHeader.size + maxBodyLength))
            start = 0
        } else if start > 4096, start * 2 > buffer.count {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }
}
