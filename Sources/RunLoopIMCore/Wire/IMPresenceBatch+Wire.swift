import SwiftProtobuf

/// PRESENCE_BATCH bodies (docs/PROTOCOL.md §8) made from PRESENCE frames and read back without
/// SwiftProtobuf's generic coder. A batch's entry is a PresenceNotice's own encoding behind its key and
/// length, so a batch is the PRESENCE bodies the server already made for its single frames, each
/// with two or three bytes in front: nothing is encoded twice, and a login in a room of a thousand
/// costs its contacts one frame a write instead of one a notice.
extension IMFrame {
    /// The most bytes the reference server puts in one PRESENCE_BATCH body (never more than the
    /// session's frame limit): a few hundred notices, so one batch never holds a client's reading
    /// long, and far below the 64 KiB frame limit.
    package static let mostPresenceBatchBody = 16_384

    /// PRESENCE_BATCH frames carrying the notices of `singles` (PRESENCE frames) in their order,
    /// each body at most `bodyLimit` bytes: as many frames as that takes. A notice that would not fit
    /// in a batch of its own (a limit below one notice) goes as its single frame, in its place.
    package static func presenceBatches(of singles: [IMFrame], bodyLimit: Int) -> [IMFrame] {
        var frames: [IMFrame] = []
        var body: [UInt8] = []
        for single in singles {
            let length = single.body.count
            let entry = 1 + varintSize(length) + length
            if !body.isEmpty, body.count + entry > bodyLimit {
                frames.append(IMFrame(command: .presenceBatch, serial: 0, body: body))
                body = []
            }
            guard entry <= bodyLimit else {
                frames.append(single)
                continue
            }
            if body.isEmpty { body.reserveCapacity(min(bodyLimit, entry * (singles.count - frames.count))) }
            body.append(0x0A)  // field 1 (notices), length-delimited
            body.appendProtobufVarint(UInt64(length))
            body.append(contentsOf: single.body)
        }
        if !body.isEmpty { frames.append(IMFrame(command: .presenceBatch, serial: 0, body: body)) }
        return frames
    }

    /// The notices a PRESENCE_BATCH frame carries, in their order.
    /// - Throws: ``IMFrameError/undecodableBody(command:reason:)`` for a body that is not a valid
    ///   encoding of a batch.
    package func presenceBatchNotices() throws(IMFrameError) -> [(user: String, online: Bool)] {
        if let notices = PresenceNoticeReader.batch(body) { return notices }
        return try decode(IMPresenceBatch.self).notices.map { ($0.user, $0.online) }
    }

    private static func varintSize(_ value: Int) -> Int {
        var size = 1
        var rest = UInt64(value) >> 7
        while rest > 0 {
            size += 1
            rest >>= 7
        }
        return size
    }
}
