import Foundation

/// Finds a key written twice in one JSON object. `JSONSerialization` keeps one of the values without a
/// word, so the server and anything else reading the same text (a proxy, a log, a filter) could each
/// act on a different one; the envelope refuses such text instead (RFC 8259 §4 leaves names that are
/// not unique to each implementation).
///
/// A pure function over text already known to be valid JSON: it only tracks objects, arrays and
/// strings, and compares keys after unescaping (`"a"` and `"\u0061"` are the same key) and as the
/// field they name: the Protocol Buffers JSON mapping reads a field under its `.proto` name and its
/// lowerCamelCase JSON name alike (`keepalive_seconds`, `keepaliveSeconds`), and keeps the last.
enum JSONDuplicateKeys {
    /// A key found twice, and how deep its object is (1: the top level).
    struct Duplicate: Equatable {
        var key: String
        var depth: Int
    }

    static func first(in text: String) -> Duplicate? {
        var text = text
        return text.withUTF8 { scan($0) }
    }

    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")

    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> Duplicate? {
        // One entry per open container: an object's keys so far (nil for an array), and whether the
        // next string in it is a key.
        var open: [(keys: Set<String>?, expectsKey: Bool)] = []
        var index = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "{"):
                open.append(([], true))
            case UInt8(ascii: "["):
                open.append((nil, false))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                _ = open.popLast()
            case UInt8(ascii: ","):
                if open.last?.keys != nil { open[open.count - 1].expectsKey = true }
            case quote:
                let start = index
                var escaped = false
                index += 1
                while index < bytes.count, bytes[index] != quote {
                    escaped = escaped || bytes[index] == backslash
                    index += bytes[index] == backslash ? 2 : 1
                }
                guard let top = open.last, top.keys != nil, top.expectsKey, index < bytes.count else { break }
                open[open.count - 1].expectsKey = false
                let key = Self.key(UnsafeBufferPointer(rebasing: bytes[start...index]), escaped: escaped)
                if open[open.count - 1].keys?.insert(field(key)).inserted == false { return Duplicate(key: key, depth: open.count) }
            default:
                break
            }
            index += 1
        }
        return nil
    }

    /// The field a key names, as its JSON name: protoc's rule drops each underscore and capitalises
    /// the letter after it (protoc refuses two fields whose JSON names collide).
    static func field(_ key: String) -> String {
        guard key.contains("_") else { return key }
        var name = ""
        var capitalizesNext = false
        for character in key {
            if character == "_" {
                capitalizesNext = true
            } else {
                name += capitalizesNext ? character.uppercased() : String(character)
                capitalizesNext = false
            }
        }
        return name
    }

    /// A key's text: its bytes between the quotes, or — when it has escapes — what JSON makes of them.
    private static func key(_ quoted: UnsafeBufferPointer<UInt8>, escaped: Bool) -> String {
        if escaped, let text = try? JSONSerialization.jsonObject(with: Data(quoted), options: .fragmentsAllowed) as? String {
            return text
        }
        return String(decoding: quoted.dropFirst().dropLast(), as: UTF8.self)
    }
}
