/// The one reader of a Protocol Buffers varint off raw bytes, for the hand-written readers that take
/// fields off the wire without SwiftProtobuf (presence notices, a cut-short message's leading id).
enum ProtobufVarint {
    /// The varint at `offset`, at most ten bytes, before `end`, with `offset` moved past it; `nil`
    /// when the bytes end first (then `offset` is where they ended).
    static func read(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: inout Int, _ end: Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < end, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }
}
