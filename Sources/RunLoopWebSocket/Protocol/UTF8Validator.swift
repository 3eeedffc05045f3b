/// An incremental UTF-8 validator: feed it a text message in any pieces (frames, or parts of frames)
/// and it says as soon as a byte cannot be valid — RFC 6455 asks to fail a text message fast, and a
/// code point may be split across fragments.
///
/// A pure value: no I/O, no allocation. Rejects overlong forms, surrogates (U+D800–U+DFFF) and code
/// points above U+10FFFF, as Unicode's well-formed UTF-8 table does.
public struct UTF8Validator: Sendable, Equatable {
    /// Continuation bytes still expected for the current code point.
    private var remaining = 0
    /// The allowed range of the next continuation byte (narrower than 80–BF right after E0, ED, F0, F4).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    public init() {}

    /// True when the bytes so far end on a code point boundary: a message may end here.
    public var isAtBoundary: Bool { remaining == 0 }

    /// Checks `bytes` as the continuation of what came before. Returns false at the first byte that
    /// makes the sequence invalid; the validator is then of no further use.
    public mutating func validate<Bytes: Collection>(_ bytes: Bytes) -> Bool where Bytes.Element == UInt8 {
        for byte in bytes {
            if remaining > 0 {
                guard byte >= lower && byte <= upper else { return false }
                remaining -= 1
                lower = 0x80
                upper = 0xBF
                continue
            }
            switch byte {
            case 0x00...0x7F: continue
            case 0xC2...0xDF: remaining = 1
            case 0xE0: remaining = 2; lower = 0xA0  // below A0 would be overlong
            case 0xE1...0xEC, 0xEE...0xEF: remaining = 2
            case 0xED: remaining = 2; upper = 0x9F  // above 9F would be a surrogate
            case 0xF0: remaining = 3; lower = 0x90  // below 90 would be overlong
            case 0xF1...0xF3: remaining = 3
            case 0xF4: remaining = 3; upper = 0x8F  // above 8F would pass U+10FFFF
            default: return false  // 80–C1 (stray continuation, overlong lead), F5–FF
            }
        }
        return true
    }

    /// Whether `bytes` is complete, valid UTF-8.
    public static func isValid<Bytes: Collection>(_ bytes: Bytes) -> Bool where Bytes.Element == UInt8 {
        var validator = UTF8Validator()
        return validator.validate(bytes) && validator.isAtBoundary
    }
}
