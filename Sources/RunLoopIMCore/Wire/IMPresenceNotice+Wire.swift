import SwiftProtobuf

/// PRESENCE bodies written and read without SwiftProtobuf's generic coder: a login in a room of a
/// thousand makes the node encode a notice for each contact online (its snapshot) and each contact's
/// client decode one (the announcement), so the generic machinery's cost is paid millions of times in
/// a crowd's logins. The bytes are exactly what SwiftProtobuf writes for the message (fields in
/// number order, a default value left out); a body laid out any other way is read by SwiftProtobuf.
extension IMPresenceNotice {
    /// The encoding of "`user` is online" (or offline): the bytes `serializedBytes()` gives for the
    /// same notice.
    package static func encoded(user: String, online: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(user.utf8.count + 8)
        bytes.appendPresenceNotice(user: user, online: online)
        return bytes
    }

    /// How many bytes ``encoded(user:online:)`` gives, without making them: a batch entry's length
    /// comes before the notice.
    package static func encodedLength(user: String, online: Bool) -> Int {
        let length = user.utf8.count
        return (length > 0 ? 1 + [UInt8].protobufVarintSize(UInt64(length)) + length : 0) + (online ? 2 : 0)
    }

    /// `body` read as a notice when it holds the user (field 1) then the state (field 2), each at
    /// most once and nothing else — every encoder's usual layout; `nil` for any other body (another
    /// order, a repeated or unknown field, a cut or invalid one), which the generic decoder reads or
    /// refuses as the protocol says.
    package static func readUsualLayout(_ body: [UInt8]) -> (user: String, online: Bool)? {
        body.withUnsafeBufferPointer { PresenceNoticeReader.notice(in: $0, from: 0, to: $0.count) }
    }
}

extension IMFrame {
    /// A PRESENCE frame for "`user` is online" (or offline), serial 0 as every notice's.
    package static func presence(of user: String, online: Bool) -> IMFrame {
        IMFrame(command: .presence, serial: 0, body: IMPresenceNotice.encoded(user: user, online: online))
    }

    /// The notice a PRESENCE frame carries.
    /// - Throws: ``IMFrameError/undecodableBody(command:reason:)`` for a body that is not a valid
    ///   encoding of one.
    package func presenceNotice() throws(IMFrameError) -> (user: String, online: Bool) {
        if let notice = IMPresenceNotice.readUsualLayout(body) { return notice }
        let notice = try decode(IMPresenceNotice.self)
        return (notice.user, notice.online)
    }
}

extension [UInt8] {
    /// Appends the encoding of "`user` is online" (or offline): the one writer of a notice's bytes,
    /// for PRESENCE bodies and for the entries of a PRESENCE_BATCH made straight from names.
    package mutating func appendPresenceNotice(user: String, online: Bool) {
        let length = user.utf8.count
        if length > 0 {
            append(0x0A)  // field 1 (user), length-delimited
            appendProtobufVarint(UInt64(length))
            append(contentsOf: user.utf8)
        }
        if online {
            append(0x10)  // field 2 (online), varint
            append(0x01)
        }
    }

    /// How many bytes ``appendProtobufVarint(_:)`` writes for `value`.
    package static func protobufVarintSize(_ value: UInt64) -> Int {
        var size = 1
        var rest = value >> 7
        while rest > 0 {
            size += 1
            rest >>= 7
        }
        return size
    }

    /// Appends `value` as a Protocol Buffers varint: seven bits a byte, low bits first.
    package mutating func appendProtobufVarint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        append(UInt8(rest))
    }
}
