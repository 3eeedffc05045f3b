/// Where a message lives: a room, or the direct conversation of two users — one conversation whichever
/// of the two writes. The unit the server numbers messages in (``IMMessage/conversationSeq``), keeps
/// each member's read cursor for, and orders deliveries by.
///
/// A value: it may cross threads.
public struct IMConversation: Hashable, Sendable, CustomStringConvertible {
    /// What the conversation is.
    public enum Kind: Hashable, Sendable {
        /// Two users; `first` sorts before or equal to `second` by UTF-8 bytes.
        case direct(first: String, second: String)
        case room(String)
    }

    public let kind: Kind

    /// The direct conversation of `a` and `b`, the same value for either order.
    public static func direct(between a: String, and b: String) -> IMConversation {
        IMConversation(kind: b.utf8.lexicographicallyPrecedes(a.utf8) ? .direct(first: b, second: a) : .direct(first: a, second: b))
    }

    /// The conversation of a room.
    public static func room(_ name: String) -> IMConversation { IMConversation(kind: .room(name)) }

    /// The conversation a message from `sender` to `recipient` belongs to.
    public init(from sender: String, to recipient: IMRecipient) {
        switch recipient {
        case .user(let other): self = .direct(between: sender, and: other)
        case .room(let name): self = .room(name)
        }
    }

    private init(kind: Kind) { self.kind = kind }

    /// The one textual key every store and the cluster bus use for it: `r:` and the room's name, or
    /// `d:`, the first user's name's length in UTF-8 bytes, `:`, then both names. The length makes it
    /// injective whatever bytes a name holds (the IM layer does not forbid `:` or NUL in names).
    public var storageKey: String {
        switch kind {
        case .room(let name): return "r:" + name
        case .direct(let first, let second): return "d:\(first.utf8.count):" + first + second
        }
    }

    /// The inverse of ``storageKey``; `nil` for a text no conversation gives.
    public init?(storageKey key: String) {
        if key.hasPrefix("r:") {
            self = .room(String(key.dropFirst(2)))
            return
        }
        guard key.hasPrefix("d:") else { return nil }
        let rest = key.utf8.dropFirst(2)
        guard let colon = rest.firstIndex(of: UInt8(ascii: ":")), let length = Int(String(decoding: rest[..<colon], as: UTF8.self)),
            length >= 0
        else { return nil }
        let names = rest[rest.index(after: colon)...]
        guard names.count >= length else { return nil }
        let split = names.index(names.startIndex, offsetBy: length)
        guard let first = String(names[..<split]), let second = String(names[split...]) else { return nil }
        let conversation = IMConversation.direct(between: first, and: second)
        // Only the normalised order is a key this type gives.
        guard conversation.kind == .direct(first: first, second: second) else { return nil }
        self = conversation
    }

    public var description: String {
        switch kind {
        case .room(let name): return "room \(name)"
        case .direct(let first, let second): return "\(first) ↔ \(second)"
        }
    }
}
