import RunLoopWebSocket
import Testing

/// The frame parser as a pure value: every split point, every header check.
@Suite struct FrameParserTests {
    /// A stream of mixed frames, masked as a client sends them.
    static let frames: [WebSocketFrame] = [
        WebSocketFrame(opcode: .text, payload: Array("hello".utf8)),
        WebSocketFrame(fin: false, opcode: .binary, payload: Array(0..<200).map { UInt8($0) }),
        WebSocketFrame(opcode: .ping, payload: [1, 2, 3]),
        WebSocketFrame(opcode: .continuation, payload: Array(repeating: 7, count: 70_000)),
        WebSocketFrame(opcode: .close, payload: [0x03, 0xE8]),
        WebSocketFrame(opcode: .pong)
    ]

    static func parseAll(_ parser: inout WebSocketFrameParser) throws -> [WebSocketFrame] {
        var out: [WebSocketFrame] = []
        while let frame = try parser.nextFrame() { out.append(frame) }
        return out
    }

    @Test func roundTripsMaskedAndUnmaskedFramesOfAllLengthForms() throws {
        for sender in [WebSocketFrameParser.Sender.client, .server] {
            let wire = Self.frames.flatMap { $0.encoded(maskingKey: sender == .client ? WebSocketMask.randomKey() : nil) }
            var parser = WebSocketFrameParser(sender: sender, maximumFrameSize: 1 << 20)
            parser.append(wire)
            #expect(try Self.parseAll(&parser) == Self.frames)
            #expect(parser.bufferedCount == 0)
        }
    }

    @Test func everySplitPointGivesTheSameFrames() throws {
        // Small frames (7-bit and 16-bit lengths) so that every split is affordable.
        let frames = [
            WebSocketFrame(opcode: .text, payload: Array("héllo".utf8)),
            WebSocketFrame(opcode: .binary, payload: Array(repeating: 9, count: 300)),
            WebSocketFrame(opcode: .ping, payload: [4, 5])
        ]
        // (The 64-bit length form needs over 64 KiB: the round-trip test above has one.)
        let wire = frames.flatMap { $0.encoded(maskingKey: [0x12, 0x34, 0x56, 0x78]) }
        let expected = frames
        for split in 0...wire.count {
            var parser = WebSocketFrameParser(sender: .client, maximumFrameSize: 1024)
            var out: [WebSocketFrame] = []
            parser.append(wire[..<split])
            out += try Self.parseAll(&parser)
            parser.append(wire[split...])
            out += try Self.parseAll(&parser)
            #expect(out == expected, "split at \(split)")
        }
        // Byte by byte.
        var parser = WebSocketFrameParser(sender: .client, maximumFrameSize: 1024)
        var out: [WebSocketFrame] = []
        for byte in wire {
            parser.append([byte])
            out += try Self.parseAll(&parser)
        }
        #expect(out == expected)
    }

    /// RFC 6455 §5.7's own examples: the masked and unmasked "Hello" single-frame text messages, and
    /// the parser unmasking the masked one. Masking runs eight bytes at a time, so a longer payload
    /// checks the word path against a byte-by-byte XOR.
    @Test func theRFCsMaskedHelloAndAWordWiseMaskMatchByteWiseXOR() throws {
        let hello = WebSocketFrame(opcode: .text, payload: Array("Hello".utf8))
        #expect(hello.encoded() == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        let masked: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(hello.encoded(maskingKey: [0x37, 0xFA, 0x21, 0x3D]) == masked)
        var parser = WebSocketFrameParser(sender: .client, maximumFrameSize: 1024)
        parser.append(masked)
        #expect(try parser.nextFrame() == hello)

        let key: [UInt8] = [0x01, 0x80, 0xFE, 0x5A]
        let payload = (0..<37).map { UInt8(truncatingIfNeeded: $0 &* 29) }
        var wordWise = payload
        WebSocketMask.apply(key, to: &wordWise, from: 3)
        let byteWise = payload.enumerated().map { index, byte in index < 3 ? byte : byte ^ key[(index - 3) & 3] }
        #expect(wordWise == byteWise)
    }

    @Test func maskingIsItsOwnInverseAndServerFramesAreUnmasked() {
        let payload = Array(0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let key: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF]
        var bytes = payload
        WebSocketMask.apply(key, to: &bytes, from: 0)
        #expect(bytes != payload)
        #expect(bytes[5] == payload[5] ^ key[1])
        WebSocketMask.apply(key, to: &bytes, from: 0)
        #expect(bytes == payload)
        let server = WebSocketFrame(opcode: .binary, payload: [1, 2, 3]).encoded()
        #expect(server == [0x82, 0x03, 1, 2, 3])
        let client = WebSocketFrame(opcode: .binary, payload: [1, 2, 3]).encoded(maskingKey: key)
        let expected: [UInt8] = [0x82, 0x83, 0xDE, 0xAD, 0xBE, 0xEF, 0xDF, 0xAF, 0xBD]  // 1^DE, 2^AD, 3^BE
        #expect(client == expected)
    }

    static func violation(_ bytes: [UInt8], sender: WebSocketFrameParser.Sender = .client, limit: Int = 1024) -> WebSocketError? {
        var parser = WebSocketFrameParser(sender: sender, maximumFrameSize: limit)
        parser.append(bytes)
        do {
            _ = try parser.nextFrame()
            return nil
        } catch {
            return error
        }
    }

    @Test func headerViolationsAreRefusedBeforeThePayloadArrives() {
        // Unmasked client frame; masked server frame.
        #expect(Self.violation([0x81, 0x05])?.closeCode == .protocolError)
        #expect(Self.violation([0x81, 0x85], sender: .server)?.closeCode == .protocolError)
        // Reserved bits, reserved opcodes.
        #expect(Self.violation([0xC1, 0x80])?.closeCode == .protocolError)
        #expect(Self.violation([0x83, 0x80])?.closeCode == .protocolError)
        #expect(Self.violation([0x8B, 0x80])?.closeCode == .protocolError)
        // A control frame over 125 bytes (16-bit length form), and a fragmented one.
        #expect(Self.violation([0x89, 0xFE, 0x00, 0x7E]) == .protocolViolation("control frame payload of 126 bytes"))
        #expect(Self.violation([0x09, 0x80])?.closeCode == .protocolError)
        // Over the frame limit: 1009, from the header alone.
        #expect(Self.violation([0x82, 0xFE, 0x04, 0x01]) == .frameTooLarge(limit: 1024))
        #expect(Self.violation([0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0])?.closeCode == .protocolError)
        // A length not in its shortest form (RFC 6455 §5.2): 5 in the 16-bit form, 200 in the 64-bit one.
        #expect(Self.violation([0x82, 0xFE, 0x00, 0x05]) == .protocolViolation("a 5-byte length in the 16-bit form"))
        #expect(Self.violation([0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0, 200]) == .protocolViolation("a 200-byte length in the 64-bit form"))
    }
}
