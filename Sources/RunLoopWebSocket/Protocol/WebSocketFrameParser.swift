/// Turns a byte stream into ``WebSocketFrame``s, incrementally: append bytes in any split, take
/// frames out as they complete. A pure value (no I/O), so every split point can be tested.
///
/// The header is checked as soon as it is complete, before any payload is buffered: reserved bits
/// (no extension is negotiated), reserved opcodes, fragmented or oversized (> 125 bytes) control
/// frames, the mask bit the role demands, and the frame size limit. A peer therefore cannot make it
/// buffer more than ``maximumFrameSize`` plus a header.
public struct WebSocketFrameParser: Sendable {
    /// Which side's frames are parsed: a server reads masked client frames, a client unmasked ones.
    public enum Sender: Sendable {
        case client
        case server
    }

    public let sender: Sender
    /// The largest payload accepted in one frame.
    public let maximumFrameSize: Int

    private var buffer: [UInt8] = []
    /// Where the next unparsed byte is; consumed bytes are dropped in bulk, not one frame at a time.
    private var start = 0

    public init(sender: Sender, maximumFrameSize: Int) {
        self.sender = sender
        self.maximumFrameSize = max(125, maximumFrameSize)
    }

    /// Bytes received and not yet part of a returned frame.
    public var bufferedCount: Int { buffer.count - start }

    public mutating func append<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame, or `nil` until more bytes arrive.
    /// - Throws: the violation; the stream is then unusable (the connection fails).
    public mutating func nextFrame() throws(WebSocketError) -> WebSocketFrame? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        let first = buffer[start]
        let second = buffer[start + 1]
        guard first & 0x70 == 0 else { throw .protocolViolation("reserved bits set without an extension") }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else {
            throw .protocolViolation("reserved opcode \(first & 0x0F)")
        }
        let fin = first & 0x80 != 0
        let masked = second & 0x80 != 0
        if opcode.isControl && !fin { throw .protocolViolation("fragmented control frame") }
        switch sender {
        case .client where !masked: throw .protocolViolation("unmasked client frame")
        case .server where masked: throw .protocolViolation("masked server frame")
        default: break
        }
        var headerLength = 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            headerLength = 4
            guard available >= headerLength else { return nil }
            length = UInt64(buffer[start + 2]) << 8 | UInt64(buffer[start + 3])
            // RFC 6455 §5.2: "the minimal number of bytes MUST be used to encode the length".
            guard length >= 126 else { throw .protocolViolation("a \(length)-byte length in the 16-bit form") }
        } else if length == 127 {
            headerLength = 10
            guard available >= headerLength else { return nil }
            length = 0
            for index in 2..<10 { length = length << 8 | UInt64(buffer[start + index]) }
            guard length >> 63 == 0 else { throw .protocolViolation("64-bit length with the top bit set") }
            guard length > 0xFFFF else { throw .protocolViolation("a \(length)-byte length in the 64-bit form") }
        }
        if opcode.isControl && length > 125 { throw .protocolViolation("control frame payload of \(length) bytes") }
        guard length <= UInt64(maximumFrameSize) else { throw .frameTooLarge(limit: maximumFrameSize) }
        let payloadStart = headerLength + (masked ? 4 : 0)
        let total = payloadStart + Int(length)
        guard available >= total else {
            buffer.reserveCapacity(start + total)
            return nil
        }
        var payload = Array(buffer[(start + payloadStart)..<(start + total)])
        if masked {
            let at = start + headerLength
            let key = UInt32(buffer[at]) << 24 | UInt32(buffer[at + 1]) << 16 | UInt32(buffer[at + 2]) << 8 | UInt32(buffer[at + 3])
            WebSocketMask.apply(word: key, to: &payload, from: 0)
        }
        start += total
        compact()
        return WebSocketFrame(fin: fin, opcode: opcode, payload: payload)
    }

    /// Drops consumed bytes once they are the larger part of the buffer: amortised O(1) per byte.
    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            start = 0
        } else if start > buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }
}
