import SwiftProtobuf

/// How many entries a paged answer (ROOM_LIST, HISTORY_PAGE) holds: what the client asked for within
/// the server's bounds, and no more than fit in one frame. Pure.
enum PageFit {
    /// The page length for a request that asked for `asked` entries (0: the default).
    static func size(asked: UInt32, default size: Int, maximum: Int) -> Int {
        asked == 0 ? size : min(Int(asked), maximum)
    }

    /// Cuts a page's repeated field to at most `limit` entries and to what fits a frame body of
    /// `frameBody` bytes beside the page's other fields (a flag, 2 bytes). Returns whether anything
    /// was cut.
    static func cut<Element: SwiftProtobuf.Message>(_ entries: inout [Element], limit: Int, frameBody: Int) -> Bool {
        var budget = frameBody - 2
        var kept = 0
        for entry in entries.prefix(limit) {
            let size = (try? entry.serializedBytes() as [UInt8])?.count ?? 0
            // A repeated message field: a one-byte tag, the length as a varint, the bytes.
            let cost = 1 + varintLength(UInt64(size)) + size
            guard cost <= budget else { break }
            budget -= cost
            kept += 1
        }
        guard kept < entries.count else { return false }
        entries.removeSubrange(kept...)
        return true
    }

    static func varintLength(_ value: UInt64) -> Int {
        var length = 1
        var rest = value >> 7
        while rest != 0 {
            length += 1
            rest >>= 7
        }
        return length
    }
}
