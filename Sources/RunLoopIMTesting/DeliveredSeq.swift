public import RunLoopIMCore

/// The `seq` of a DELIVER read straight off its body's wire format. Decoding a whole 60 KB message
/// with SwiftProtobuf takes ~55 ms in a debug build (its UTF-8 checks are unoptimized there), so tests
/// that move 100 MB of messages read only the field they need.
public func deliveredSeq(_ frame: IMFrame) -> UInt64? {
    var reader = ProtobufPrefixReader(bytes: frame.body)
    while let key = reader.readVarint() {
        switch key & 7 {
        case 0:
            guard let value = reader.readVarint() else { return nil }
            if key >> 3 == 6 { return value }
        case 2:
            guard let length = reader.readVarint(), reader.take(length) != nil else { return nil }
        default:
            return nil
        }
    }
    return nil
}
