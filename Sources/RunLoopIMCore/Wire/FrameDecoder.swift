/// Reassembles frames from a byte stream by their length prefix, whatever the read sizes were.
///
/// A pure value: feed it bytes with ``append(_:)``, take frames with ``next()``. It checks each header
/// as soon as its 16 bytes are in — an oversized length or an unknown version fails before a byte of
/// the body is buffered — so a hostile peer can make it hold at most one header plus one body within
/// ``maximumBodyLength``. After an error the stream is unusable (there is no way to find the next frame
/// boundary): close the connection.
public struct FrameDecoder: Sendable {
    /// What ``nextEvent()`` found.
    public enum Event: Sendable, Equatable {
        /// A whole frame within the limit.
        case frame(IMFrame)
        /// A frame of a skippable command whose body was over the limit: read and dropped but for its
        /// first ``FrameDecoder/keptPrefixLength`` bytes, so the receiver can answer it (a SEND's id)
        /// and the stream goes on.
        case oversized(FrameHeader, bodyPrefix: [UInt8])
    }

    /// How many bytes of an oversized body ``Event/oversized(_:bodyPrefix:)`` keeps.
    public static let keptPrefixLength = 256

    /// SEND alone, as ``skippableCommands`` for a server's decoders: one set all of them share (a set
    /// made per decoder is an allocation per connection).
    public static let sendOnly: Set<UInt16> = [IMCommand.send.rawValue]

    /// The largest body accepted, in bytes.
    public var maximumBodyLength: Int { Int(maximumBody) }
    /// Bodies over ``maximumBodyLength`` but at most this long, of ``skippableCommands``, are skipped
    /// instead of failing the stream.
    public var skippableBodyLength: Int { Int(skippableBody) }
    public let skippableCommands: Set<UInt16>
    /// The serial of the header that failed the stream (its version or length), when one did: an
    /// ERROR about it echoes the serial (0 stays for failures no header is to blame for).
    public var failedSerial: UInt32? {
        if case .failed(_, let serial)? = unusual { serial } else { nil }
    }

    // Every server connection holds a decoder inline, idle or not, so its layout is per-connection
    // memory (issue 22): the limits fit the header's 32-bit length field, and a failure or a skip —
    // rare, and never both — is one boxed value instead of two inline optionals (~70 bytes).
    private var maximumBody: UInt32
    private let skippableBody: UInt32
    private var buffer: [UInt8] = []
    private var start = 0
    private var unusual: Unusual?

    /// What the stream is in the middle of, when it is not plain frames. Indirect: a box, made only
    /// when a stream fails or a body is skipped, keeps the decoder one word for both.
    private indirect enum Unusual: Sendable {
        /// The stream failed with this error (a header's serial, when a header was to blame).
        case failed(IMFrameError, serial: UInt32?)
        /// An oversized body being read past.
        case skipping(Skip)
    }

    private var failure: IMFrameError? {
        if case .failed(let error, _)? = unusual { error } else { nil }
    }

    private struct Skip: Sendable {
        let header: FrameHeader
        var remaining: Int
        var prefix: [UInt8] = []

        /// Drops `bytes` from the skipped body, keeping the first of them; returns how many it took.
        mutating func consume<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Int {
            let taken = min(remaining, bytes.count)
            let kept = min(taken, FrameDecoder.keptPrefixLength - prefix.count)
            if kept > 0 { prefix.append(contentsOf: bytes.prefix(kept)) }
            remaining -= taken
            return taken
        }
    }

    /// - Parameters:
    ///   - maximumBodyLength: the largest body accepted (default 64 KiB); at most `UInt32.max`.
    ///   - skippableBodyLength: a body of one of `skippableCommands` up to this long is skipped and
    ///     reported (``Event/oversized(_:bodyPrefix:)``) rather than failing the stream; its bytes are
    ///     never buffered. 0 (the default): every oversized body fails the stream.
    public init(maximumBodyLength: Int = 64 * 1024, skippableBodyLength: Int = 0, skippableCommands: Set<UInt16> = []) {
        // The header's length field is 32 bits: a larger limit means nothing, and would overflow the
        // buffer arithmetic below (found by the fuzzing work: Int.max / 4 trapped).
        precondition((0...Int(UInt32.max)).contains(maximumBodyLength), "maximumBodyLength must be 0...UInt32.max")
        precondition((0...Int(UInt32.max)).contains(skippableBodyLength), "skippableBodyLength must be 0...UInt32.max")
        self.maximumBody = UInt32(maximumBodyLength)
        self.skippableBody = UInt32(skippableBodyLength)
        self.skippableCommands = skippableCommands
    }

    /// Accepts bodies up to `limit` from now on, also for bytes already buffered (a client raises
    /// its limit to the one the server announced at login, in the middle of a read). Never lowers it.
    public mutating func raiseMaxBodyLength(to limit: Int) {
        precondition(limit <= Int(UInt32.max), "maximumBodyLength must be 0...UInt32.max")
        if limit > maximumBodyLength { maximumBody = UInt32(limit) }
    }

    /// Bytes received and not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - start }

    /// The room the buffer holds, read or not (0 between reads).
    var bufferCapacity: Int { buffer.capacity }

    /// Adds received bytes: an array is taken as it is when nothing is buffered (no copy), and let
    /// go once its frames are read, so a connection between reads holds no buffer.
    public mutating func append(_ bytes: [UInt8]) {
        guard unusual == nil, start == buffer.count else { return append(bytes[...]) }
        buffer = bytes
        start = 0
    }

    /// Adds received bytes.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard failure == nil else { return }
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        if case .skipping(var skip)? = unusual, start == buffer.count {
            // A skipped body goes straight past the buffer: however long it is, it costs no memory.
            unusual = nil  // the box let go, the kept prefix is the skip's alone: no copy to append
            let taken = skip.consume(bytes)
            unusual = .skipping(skip)
            buffer.append(contentsOf: bytes.dropFirst(taken))
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    /// The next complete frame, or `nil` until more bytes arrive. An oversized body fails the stream
    /// here even when it is skippable: readers that skip call ``nextEvent()``.
    /// - Throws: ``IMFrameError/frameTooLarge(length:limit:)`` or ``IMFrameError/unsupportedVersion(_:)``;
    ///   the same error again on every later call.
    public mutating func next() throws(IMFrameError) -> IMFrame? {
        switch try nextEvent() {
        case .frame(let frame)?: return frame
        case .oversized(let header, _)?:
            return try fail(.frameTooLarge(length: header.bodyLength, limit: maximumBodyLength), serial: header.serial)
        case nil: return nil
        }
    }

    /// The next complete frame or skipped oversized frame, or `nil` until more bytes arrive.
    /// - Throws: as ``next()``, for a body over ``skippableBodyLength`` or of a command that is not skippable.
    public mutating func nextEvent() throws(IMFrameError) -> Event? {
        var storage: [UInt8] = []
        return try nextEvent(bodyStorage: &storage)
    }

    /// As ``nextEvent()``, with a frame's body written into `bodyStorage`'s room instead of a new
    /// array (a frame returned takes it: `bodyStorage` is left empty). A reader that takes each body
    /// back once its frame was handled (an IM link, one per thread) reads frames with no allocation
    /// and no free each, some 400 instructions a frame (issue 22, IM-RESULTS "cread"). A storage
    /// still shared with an earlier receiver is copied when emptied: one allocation, as before.
    package mutating func nextEvent(bodyStorage: inout [UInt8]) throws(IMFrameError) -> Event? {
        switch unusual {
        case nil: break
        case .failed(let error, _)?: throw error
        case .skipping(var skip)?:
            unusual = nil  // as in append: the prefix is then the skip's alone
            start += skip.consume(buffer[start...])
            guard skip.remaining == 0 else {
                unusual = .skipping(skip)
                return nil
            }
            compactIfWorthIt()
            return .oversized(skip.header, bodyPrefix: skip.prefix)
        }
        guard buffer.count - start >= FrameHeader.size else { return nil }
        let header = buffer.withUnsafeBytes { FrameHeader(reading: $0, at: start) }
        if header.version != FrameHeader.currentVersion {
            return try fail(.unsupportedVersion(header.version), serial: header.serial)
        }
        if Int(header.bodyLength) > maximumBodyLength {
            guard Int(header.bodyLength) <= skippableBodyLength, skippableCommands.contains(header.command) else {
                return try fail(
                    .frameTooLarge(length: header.bodyLength, limit: maximumBodyLength), serial: header.serial)
            }
            start += FrameHeader.size
            unusual = .skipping(Skip(header: header, remaining: Int(header.bodyLength)))
            return try nextEvent(bodyStorage: &bodyStorage)
        }
        let end = start + FrameHeader.size + Int(header.bodyLength)
        guard buffer.count >= end else { return nil }
        var body: [UInt8] = []
        swap(&body, &bodyStorage)
        body.removeAll(keepingCapacity: true)
        buffer.withUnsafeBufferPointer { bytes in
            body.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[(start + FrameHeader.size)..<end]))
        }
        start = end
        compactIfWorthIt()
        return .frame(IMFrame(header: header, body: body))
    }

    private mutating func fail<Result>(_ error: IMFrameError, serial: UInt32?) throws(IMFrameError) -> Result? {
        unusual = .failed(error, serial: serial)
        buffer = []
        start = 0
        throw error
    }

    /// Drops consumed bytes once they are the larger part of the buffer, so memory stays bounded by
    /// what is unread while each byte is moved O(1) times on average.
    private mutating func compactIfWorthIt() {
        if start == buffer.count {
            buffer = []
            start = 0
        } else if start > 4096, start * 2 > buffer.count {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }
}
