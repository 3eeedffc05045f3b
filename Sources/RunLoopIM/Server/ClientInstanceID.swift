import RunLoopIMCore

/// A client instance as its LOGIN names it (docs/PROTOCOL.md §5: at most 64 bytes), kept for every
/// online session with one: a UUID in lowercase canonical text — what `IMClient` and the Python test
/// client send — as its 16 bytes, anything else as its text. As text, a UUID cost every session an
/// 80-byte string of its own (issue 22). Two IDs are equal exactly when their texts are.
struct ClientInstanceID: Hashable {
    private enum Storage: Hashable {
        case uuid(UInt64, UInt64)
        case text(String)
    }

    private let storage: Storage

    init(_ text: String) {
        storage = Self.uuidWords(of: text).map { .uuid($0.high, $0.low) } ?? .text(text)
    }

    /// The text the login sent, byte for byte.
    var text: String {
        switch storage {
        case .text(let text): return text
        case .uuid(let high, let low): return UUIDText.text(high: high, low: low)
        }
    }

    /// Whether it is kept as 16 bytes (for tests).
    var isCompact: Bool {
        if case .uuid = storage { return true }
        return false
    }

    /// Hyphens after the 8th, 12th, 16th and 20th digit.
    private static let hyphenOffsets: Set<Int> = [8, 13, 18, 23]

    /// The 128 bits of a lowercase canonical UUID text (8-4-4-4-12 hexadecimal digits); `nil` for
    /// anything else, uppercase included, so that the text comes back exactly.
    private static func uuidWords(of text: String) -> (high: UInt64, low: UInt64)? {
        guard text.utf8.count == 36 else { return nil }
        if let words = text.utf8.withContiguousStorageIfAvailable(uuidWords(of:)) { return words }
        // A string not stored as contiguous UTF-8 (bridged): made so once, rare.
        var copy = text
        copy.makeContiguousUTF8()
        return copy.utf8.withContiguousStorageIfAvailable(uuidWords(of:)) ?? nil
    }

    private static func uuidWords(of bytes: UnsafeBufferPointer<UInt8>) -> (high: UInt64, low: UInt64)? {
        var words: (high: UInt64, low: UInt64) = (0, 0)
        var digits = 0
        for (offset, byte) in bytes.enumerated() {
            if hyphenOffsets.contains(offset) {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            let value: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            if digits < 16 {
                words.high = words.high << 4 | UInt64(value)
            } else {
                words.low = words.low << 4 | UInt64(value)
            }
            digits += 1
        }
        return words
    }
}
