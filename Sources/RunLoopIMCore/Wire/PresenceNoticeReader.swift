/// PRESENCE notices in their usual layout read straight off a body's bytes: a PRESENCE frame's whole
/// body, or each entry of a PRESENCE_BATCH where it lies. A crowd's logins bring a client a notice per
/// contact; reading them through an array-backed reader (a copy of the array reference for each
/// entry, a slice for each name, bounds checked byte by byte) cost more than the rest of a notice's
/// handling.
///
/// The usual layout is the user (field 1) then the state (field 2), each at most once and nothing
/// else: what every encoder writes. Anything else is not read here (`nil`): the generic decoder reads
/// or refuses it as the protocol says.
enum PresenceNoticeReader {
    /// The notice in `bytes[start..<end]`, or `nil` when it is not in the usual layout.
    static func notice(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> (user: String, online: Bool)? {
        var offset = start
        var user = ""
        var online = false
        guard var key = nextKey(bytes, &offset, end) else { return nil }
        if key == 0x0A {
            guard let length = varint(bytes, &offset, end), length <= UInt64(end - offset) else { return nil }
            let name = UnsafeBufferPointer(rebasing: bytes[offset..<(offset + Int(length))])
            offset += Int(length)
            // ASCII is valid UTF-8 as it is: the generic validation costs some 900 instructions a
            // name (callgrind), many times the rest of the notice.
            if isASCII(name) {
                user = String(decoding: name, as: UTF8.self)
            } else {
                guard let text = String(validating: name, as: UTF8.self) else { return nil }
                user = text
            }
            guard let next = nextKey(bytes, &offset, end) else { return nil }
            key = next
        }
        if key == 0x10 {
            guard let value = varint(bytes, &offset, end) else { return nil }
            online = value != 0
            guard let next = nextKey(bytes, &offset, end) else { return nil }
            key = next
        }
        // Read to its end: anything else is the generic decoder's to judge.
        guard key == endOfFields else { return nil }
        return (user, online)
    }

    /// The notices of a PRESENCE_BATCH body that holds entries only (field 1), each in the usual
    /// layout; `nil` for anything else.
    static func batch(_ body: [UInt8]) -> [(user: String, online: Bool)]? {
        body.withUnsafeBufferPointer { bytes in
            var notices: [(user: String, online: Bool)] = []
            // Entries of short names take a dozen bytes: enough room for most batches in one go.
            notices.reserveCapacity(bytes.count / 12)
            var offset = 0
            while offset < bytes.count {
                guard varint(bytes, &offset, bytes.count) == 0x0A, let length = varint(bytes, &offset, bytes.count),
                    length <= UInt64(bytes.count - offset)
                else { return nil }
                let end = offset + Int(length)
                guard let notice = notice(in: bytes, from: offset, to: end) else { return nil }
                notices.append(notice)
                offset = end
            }
            return notices
        }
    }

    /// What ``nextKey(_:_:_:)`` gives at the end of the fields: no key has this value (a key's field
    /// number is at least 1).
    private static let endOfFields: UInt64 = 0

    /// The next field's key, ``endOfFields`` at the end, `nil` for a key cut short.
    private static func nextKey(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: inout Int, _ end: Int) -> UInt64? {
        guard offset < end else { return endOfFields }
        guard let key = varint(bytes, &offset, end), key != endOfFields else { return nil }
        return key
    }

    private static func varint(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: inout Int, _ end: Int) -> UInt64? {
        ProtobufVarint.read(bytes, &offset, end)
    }

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var any: UInt8 = 0
        for byte in bytes { any |= byte }
        return any < 0x80
    }
}
