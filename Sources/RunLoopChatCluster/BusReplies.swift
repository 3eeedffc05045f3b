import RunLoopRedis

// What the bus reader takes out of Redis's replies, and the one number it puts into a command.

/// One stream's part of an `XREAD` reply.
struct StreamBatch: Equatable, Sendable {
    var key: String
    var entries: [(id: StreamID, fields: [[UInt8]])]

    init(key: String, entries: [(id: StreamID, fields: [[UInt8]])]) {
        self.key = key
        self.entries = entries
    }

    static func == (lhs: StreamBatch, rhs: StreamBatch) -> Bool {
        lhs.key == rhs.key && lhs.entries.elementsEqual(rhs.entries) { $0.id == $1.id && $0.fields == $1.fields }
    }

    /// The batches of an `XREAD` reply: `[[key, [[id, [field, value, …]], …]], …]`; `[]` for the nil
    /// reply of a block that timed out; `nil` for a reply of another shape.
    static func batches(in reply: RedisReply) -> [StreamBatch]? {
        if reply == .null { return [] }
        guard let streams = reply.array else { return nil }
        var batches: [StreamBatch] = []
        for stream in streams {
            guard let pair = stream.array, pair.count == 2, let key = pair[0].string, let items = pair[1].array else { return nil }
            var entries: [(id: StreamID, fields: [[UInt8]])] = []
            for item in items {
                guard let entry = item.array, entry.count == 2, let id = entry[0].string.flatMap(StreamID.init),
                    let fields = entry[1].array
                else { return nil }
                entries.append((id, fields.map { if case .bytes(let bytes) = $0 { bytes } else { [] } }))
            }
            batches.append(StreamBatch(key: key, entries: entries))
        }
        return batches
    }
}

extension Duration {
    /// Whole milliseconds, at least 1: `BLOCK 0` would block forever.
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return max(1, seconds * 1_000 + attoseconds / 1_000_000_000_000_000)
    }
}

/// The `run_id` line of an `INFO server` reply: which Redis process answered.
func redisRunID(in reply: RedisReply) -> String? {
    reply.string?.split(whereSeparator: \.isNewline).first { $0.hasPrefix("run_id:") }.map { String($0.dropFirst("run_id:".count)) }
}
