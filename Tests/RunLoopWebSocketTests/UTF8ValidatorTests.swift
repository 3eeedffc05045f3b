import RunLoopWebSocket
import Testing

@Suite struct UTF8ValidatorTests {
    static let valid: [[UInt8]] = [
        Array("plain ascii".utf8), Array("κόσμε".utf8), Array("𝄞 and 中文".utf8),
        [0xF4, 0x8F, 0xBF, 0xBF], [0xEF, 0xBF, 0xBF], [0xED, 0x9F, 0xBF], []
    ]
    static let invalid: [[UInt8]] = [
        [0x80], [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
        [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xED, 0xA0, 0x80, 0x65],
        [0xCE], [0xF0, 0x9D, 0x84]
    ]

    @Test func acceptsWellFormedAndRejectsTheRest() {
        for bytes in Self.valid { #expect(UTF8Validator.isValid(bytes), "\(bytes)") }
        for bytes in Self.invalid { #expect(!UTF8Validator.isValid(bytes), "\(bytes)") }
    }

    @Test func aCodePointSplitAtAnyPointValidatesTheSame() {
        for bytes in Self.valid + Self.invalid {
            for split in 0...bytes.count {
                var validator = UTF8Validator()
                let ok = validator.validate(bytes[..<split]) && validator.validate(bytes[split...]) && validator.isAtBoundary
                #expect(ok == UTF8Validator.isValid(bytes), "\(bytes) split at \(split)")
            }
        }
    }

    @Test func failsFastAtTheFirstBadByte() {
        var validator = UTF8Validator()
        let ascii = validator.validate(Array("ok".utf8))
        let start = validator.validate([0xF0, 0x9D])
        #expect(ascii && start)
        #expect(!validator.isAtBoundary)
        let broken = validator.validate([0x41])
        #expect(!broken)
    }
}
