import RunLoopRedis

/// What `XINFO STREAM` (Redis 7) says about a stream, as much as the bus reader needs to prove that
/// it missed nothing.
struct StreamStatus: Equatable, Sendable {
    /// The id the stream handed out last (it stays after its entry is trimmed).
    var lastGenerated: StreamID
    /// The oldest entry it still holds; `nil` when it holds none.
    var firstEntry: StreamID?
    /// Entries ever added to it.
    var entriesAdded: UInt64
    /// Entries it holds now.
    var length: UInt64

    init(lastGenerated: StreamID, firstEntry: StreamID?, entriesAdded: UInt64, length: UInt64) {
        self.lastGenerated = lastGenerated
        self.firstEntry = firstEntry
        self.entriesAdded = entriesAdded
        self.length = length
    }

    /// The status in an `XINFO STREAM` reply (name, value, name, value, …); `nil` when it lacks
    /// what Redis 7 puts there.
    init?(reply: RedisReply) {
        guard let items = reply.array, items.count.isMultiple(of: 2) else { return nil }
        var values: [String: RedisReply] = [:]
        for index in stride(from: 0, to: items.count, by: 2) {
            guard let name = items[index].string else { return nil }
            values[name] = items[index + 1]
        }
        guard let last = values["last-generated-id"]?.string.flatMap(StreamID.init),
            let added = values["entries-added"]?.integer, let length = values["length"]?.integer,
            let first = values["first-entry"]
        else { return nil }
        lastGenerated = last
        firstEntry = first.array?.first?.string.flatMap(StreamID.init)
        entriesAdded = UInt64(clamping: added)
        self.length = UInt64(clamping: length)
    }

    /// Whether the stream still holds every entry it was given after `position`. The bus never deletes
    /// entries but by `MAXLEN` trimming, which removes the oldest: so it does when nothing was ever
    /// trimmed, or when no id fits between `position` and its oldest entry (a stream holding none: when
    /// the last id it gave is at or before `position`). A reader whose own last entry was trimmed cannot
    /// tell whether the entries right after it went too, and counts as fallen behind: by then it is at
    /// least the window's length behind anyway.
    func holdsEverything(after position: StreamID) -> Bool {
        if entriesAdded == length { return true }
        return resumePoint <= position
    }

    /// Where a reader that fell behind in it reads on from: just before its oldest entry (the last id
    /// it gave when it holds none). From there it holds everything again, so the gap is reported once.
    var resumePoint: StreamID { firstEntry?.predecessor ?? lastGenerated }

    /// What reading on from `position` is worth, `status` being the stream's now (`nil`: no such key).
    static func check(position: StreamID, status: StreamStatus?) -> StreamCheck {
        guard let status else { return position == .zero ? .intact : .reset }
        if status.lastGenerated < position { return .reset }
        return status.holdsEverything(after: position) ? .intact : .trimmed
    }
}

/// What a stream's status says of a reader's position in it.
enum StreamCheck: Equatable, Sendable {
    /// Every entry after the position is still there: reading on from it misses nothing.
    case intact
    /// Entries after the position were trimmed unread: read on, but the reader fell behind.
    case trimmed
    /// The stream is not the one the position was in (gone, or its ids went backwards: Redis came
    /// back empty, or the key was deleted): read it from its start; the reader fell behind.
    case reset
}
