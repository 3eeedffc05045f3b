extension IMChatMessage {
    /// The message's `id` (field 1) read from the first bytes of its encoding, for answering a SEND
    /// whose body was too large to keep: the client settles its message by id, and every encoder
    /// writes fields in number order, so the id comes first. `nil` when the prefix does not hold it
    /// whole, or is not a valid start of an encoding.
    package static func leadingID(in prefix: [UInt8]) -> String? {
        var reader = ProtobufPrefixReader(bytes: prefix)
        // Field 1, length-delimited (key 0x0A), must come first; an empty id is not encoded at all.
        guard reader.readVarint() == 0x0A, let length = reader.readVarint(), let bytes = reader.take(length) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// Reads varints and byte runs off the front of a Protocol Buffers encoding that may be cut short —
/// or off one length-delimited field inside it (``init(bytes:from:to:)``), sharing the bytes.
package struct ProtobufPrefixReader {
    let bytes: [UInt8]
    var offset: Int
    /// Where reading stops: the end of the bytes, or of the field read.
    let end: Int

    package init(bytes: [UInt8]) {
        self.init(bytes: bytes, from: 0, to: bytes.count)
    }

    /// Reads `bytes[start..<end]` only.
    package init(bytes: [UInt8], from start: Int, to end: Int) {
        precondition(0 <= start && start <= end && end <= bytes.count, "a range inside the bytes")
        self.bytes = bytes
        offset = start
        self.end = end
    }

    /// Whether every byte was read.
    package var isAtEnd: Bool { offset == end }

    package mutating func readVarint() -> UInt64? {
        var position = offset
        defer { offset = position }
        return bytes.withUnsafeBufferPointer { ProtobufVarint.read($0, &position, end) }
    }

    package mutating func take(_ count: UInt64) -> ArraySlice<UInt8>? {
        guard count <= UInt64(end - offset) else { return nil }
        defer { offset += Int(count) }
        return bytes[offset..<(offset + Int(count))]
    }
}
