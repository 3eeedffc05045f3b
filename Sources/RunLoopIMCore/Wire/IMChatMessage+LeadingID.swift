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

/// Reads varints and byte runs off the front of a Protocol Buffers encoding that may be cut short.
package struct ProtobufPrefixReader {
    let bytes: [UInt8]
    var offset = 0

    package init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Whether every byte was read.
    package var isAtEnd: Bool { offset == bytes.count }

    package mutating func readVarint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    package mutating func take(_ count: UInt64) -> ArraySlice<UInt8>? {
        guard count <= UInt64(bytes.count - offset) else { return nil }
        defer { offset += Int(count) }
        return bytes[offset..<(offset + Int(count))]
    }
}
