import RunLoopIMCore

/// One stream entry of the bus: which node published which ``ClusterEvent``, as the entry's fields —
/// Redis's own field/value pairs, no format of our own around them:
///
/// | field | value |
/// | --- | --- |
/// | `k` | the kind: `m` message, `j` membership, `p` presence, `a` away with a stopped node, `c` catch up |
/// | `n` | the publishing node's id |
/// | `m` | a message: its ChatMessage Protocol Buffers encoding (docs/PROTOCOL.md §5) |
/// | `u`, `r` | a membership's user and room; `u` a presence's or an away user |
/// | `s` | a membership's or presence's state: `1` joined/online, `0` left/offline |
/// | `q` | a membership's number in its room's membership order, in decimal; a room message's: the room's at its commit |
///
/// A message entry without `q` (a direct message, a resend, a node from before messages carried it)
/// is read as a message whose number is not known.
/// A membership entry without `q` (a node from before rooms numbered their changes) is not read: its
/// notice could reach members who joined after it.
struct BusEntry: Equatable, Sendable {
    var origin: String
    var event: ClusterEvent

    /// The entry's field/value pairs, flattened as `XADD` takes them.
    var fields: [[UInt8]] {
        var pairs: [(String, [UInt8])] = [("n", Array(origin.utf8))]
        switch event {
        case .message(let message, let membershipSeq):
            pairs = [("k", Array("m".utf8))] + pairs + [("m", message.encodedBytes)] + (membershipSeq.map { [("q", Array(String($0).utf8))] } ?? [])
        case .membership(let user, let room, let joined, let seq):
            pairs =
                [("k", Array("j".utf8))] + pairs
                + [("u", Array(user.utf8)), ("r", Array(room.utf8)), ("s", Self.flag(joined)), ("q", Array(String(seq).utf8))]
        case .presence(let user, let online):
            pairs = [("k", Array("p".utf8))] + pairs + [("u", Array(user.utf8)), ("s", Self.flag(online))]
        case .awayWithNode(let user):
            pairs = [("k", Array("a".utf8))] + pairs + [("u", Array(user.utf8))]
        case .catchUp:
            pairs = [("k", Array("c".utf8))] + pairs
        }
        return pairs.flatMap { [Array($0.0.utf8), $0.1] }
    }

    init(origin: String, event: ClusterEvent) {
        self.origin = origin
        self.event = event
    }

    /// The entry whose flattened fields are `fields`; `nil` for an entry this version cannot read (a
    /// kind it does not know, a field missing or malformed): the reader skips it, and the store still
    /// has what it stood for.
    init?(fields: [[UInt8]]) {
        guard fields.count.isMultiple(of: 2) else { return nil }
        var values: [String: [UInt8]] = [:]
        for index in stride(from: 0, to: fields.count, by: 2) {
            values[String(decoding: fields[index], as: UTF8.self)] = fields[index + 1]
        }
        func text(_ name: String) -> String? { values[name].flatMap { String(validating: $0, as: UTF8.self) } }
        func flag(_ name: String) -> Bool? {
            switch text(name) {
            case "1": return true
            case "0": return false
            default: return nil
            }
        }
        guard let origin = text("n") else { return nil }
        switch text("k") {
        case "m":
            guard let bytes = values["m"], let message = IMMessage(encodedBytes: bytes) else { return nil }
            // A malformed number is no number: the message still passes, as from an older node.
            self.init(origin: origin, event: .message(message, membershipSeq: text("q").flatMap { UInt64($0) }))
        case "j":
            guard let user = text("u"), let room = text("r"), let joined = flag("s"), let seq = text("q").flatMap({ UInt64($0) }) else { return nil }
            self.init(origin: origin, event: .membership(user: user, room: room, joined: joined, seq: seq))
        case "p":
            guard let user = text("u"), let online = flag("s") else { return nil }
            self.init(origin: origin, event: .presence(user: user, online: online))
        case "a":
            guard let user = text("u") else { return nil }
            self.init(origin: origin, event: .awayWithNode(user: user))
        case "c":
            self.init(origin: origin, event: .catchUp)
        default:
            return nil
        }
    }

    private static func flag(_ value: Bool) -> [UInt8] { Array((value ? "1" : "0").utf8) }
}
