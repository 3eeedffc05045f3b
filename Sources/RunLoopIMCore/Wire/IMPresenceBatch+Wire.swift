import SwiftProtobuf

/// PRESENCE_BATCH bodies (docs/PROTOCOL.md §8) made from PRESENCE frames or straight from names
/// (``PresenceBatchWriter``), and read back without SwiftProtobuf's generic coder. A batch's entry is
/// a PresenceNotice's own encoding behind its key and length, so a batch is the PRESENCE bodies the
/// server already made for its single frames, each with two or three bytes in front: nothing is
/// encoded twice, and a login in a room of a thousand costs its contacts one frame a write instead of
/// one a notice.
extension IMFrame {
    /// The most bytes the reference server puts in one PRESENCE_BATCH body (never more than the
    /// session's frame limit): a few hundred notices, so one batch never holds a client's reading
    /// long, and far below the 64 KiB frame limit.
    package static let mostPresenceBatchBody = 16_384

    /// PRESENCE_BATCH frames carrying the notices of `singles` (PRESENCE frames) in their order,
    /// each body at most `bodyLimit` bytes: as many frames as that takes. A notice that would not fit
    /// in a batch of its own (a limit below one notice) goes as its single frame, in its place.
    package static func presenceBatches(of singles: [IMFrame], bodyLimit: Int) -> [IMFrame] {
        var batches = PresenceBatchWriter(bodyLimit: bodyLimit, notices: singles.count)
        for single in singles { batches.append(single) }
        return batches.finish()
    }

    /// The notices a PRESENCE_BATCH frame carries, in their order.
    /// - Throws: ``IMFrameError/undecodableBody(command:reason:)`` for a body that is not a valid
    ///   encoding of a batch.
    package func presenceBatchNotices() throws(IMFrameError) -> [(user: String, online: Bool)] {
        if let notices = PresenceNoticeReader.batch(body) { return notices }
        return try decode(IMPresenceBatch.self).notices.map { ($0.user, $0.online) }
    }
}

/// PRESENCE_BATCH frames made a notice at a time (docs/PROTOCOL.md §8), each body at most a bound:
/// the one place a batch is laid out and cut. A notice comes as its PRESENCE frame (an announcement's
/// frame, made once for all its recipients) or as a name and a state (a snapshot page, whose notices
/// are encoded straight into the batch: a PRESENCE frame made per contact and copied into it cost a
/// snapshot notice an allocation and a copy). A notice that would not fit in a batch of its own (a
/// bound below one notice) goes as its single frame, in its place.
package struct PresenceBatchWriter {
    private let bodyLimit: Int
    /// Notices still to come, for the size of the next body.
    private var left: Int
    private var frames: [IMFrame] = []
    private var body: [UInt8] = []

    /// A writer of `notices` notices (a hint for the buffer: more or fewer may come) in bodies of at
    /// most `bodyLimit` bytes.
    package init(bodyLimit: Int, notices: Int) {
        self.bodyLimit = bodyLimit
        left = notices
    }

    /// The notice a PRESENCE frame carries.
    package mutating func append(_ single: IMFrame) {
        if startEntry(noticeLength: single.body.count) {
            body.append(contentsOf: single.body)
        } else {
            frames.append(single)
        }
    }

    /// The notice "`user` is online" (or offline), encoded into the batch.
    package mutating func append(user: String, online: Bool) {
        if startEntry(noticeLength: IMPresenceNotice.encodedLength(user: user, online: online)) {
            body.appendPresenceNotice(user: user, online: online)
        } else {
            frames.append(.presence(of: user, online: online))
        }
    }

    /// The frames, in the order of the notices; the writer is empty after it.
    package mutating func finish() -> [IMFrame] {
        if !body.isEmpty { frames.append(IMFrame(command: .presenceBatch, serial: 0, body: body)) }
        body = []
        defer { frames = [] }
        return frames
    }

    /// Starts the entry of a notice of `length` bytes: its key and length, in the current body or,
    /// past the bound, in a new one. Returns false, with nothing started, when the entry is over the
    /// bound on its own: the notice goes as its single frame, after the body so far.
    private mutating func startEntry(noticeLength length: Int) -> Bool {
        let entry = 1 + [UInt8].protobufVarintSize(UInt64(length)) + length
        if !body.isEmpty, body.count + entry > bodyLimit {
            frames.append(IMFrame(command: .presenceBatch, serial: 0, body: body))
            body = []
        }
        left = max(1, left) - 1
        guard entry <= bodyLimit else { return false }
        if body.isEmpty { body.reserveCapacity(min(bodyLimit, entry * (left + 1))) }
        body.append(0x0A)  // field 1 (notices), length-delimited
        body.appendProtobufVarint(UInt64(length))
        return true
    }
}
