import RunLoopWebSocket
import Testing

@Suite struct MessageAssemblerTests {
    @Test func reassemblesFragmentsWithControlFramesBetween() throws {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        #expect(try assembler.receive(WebSocketFrame(fin: false, opcode: .text, payload: Array("he".utf8))) == nil)
        #expect(try assembler.receive(WebSocketFrame(opcode: .ping, payload: [1])) == .ping([1]))
        #expect(try assembler.receive(WebSocketFrame(fin: false, opcode: .continuation, payload: Array("ll".utf8))) == nil)
        #expect(try assembler.receive(WebSocketFrame(opcode: .continuation, payload: Array("o".utf8))) == .message(.text("hello")))
        #expect(try assembler.receive(WebSocketFrame(opcode: .binary, payload: [9])) == .message(.binary([9])))
    }

    @Test func continuationRulesAreEnforced() {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        #expect(throws: WebSocketError.protocolViolation("continuation outside a message")) {
            try assembler.receive(WebSocketFrame(opcode: .continuation, payload: [1]))
        }
        var other = WebSocketMessageAssembler(maximumMessageSize: 100)
        _ = try? other.receive(WebSocketFrame(fin: false, opcode: .binary, payload: [1]))
        #expect(throws: WebSocketError.protocolViolation("new message inside a fragmented one")) {
            try other.receive(WebSocketFrame(opcode: .text, payload: [1]))
        }
    }

    @Test func utf8IsCheckedAcrossFragmentsAndFailsFast() throws {
        // "€" (E2 82 AC) split over three fragments is fine.
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 100)
        _ = try assembler.receive(WebSocketFrame(fin: false, opcode: .text, payload: [0xE2]))
        _ = try assembler.receive(WebSocketFrame(fin: false, opcode: .continuation, payload: [0x82]))
        #expect(try assembler.receive(WebSocketFrame(opcode: .continuation, payload: [0xAC])) == .message(.text("€")))
        // A bad byte in the first fragment fails before the message ends.
        #expect(throws: WebSocketError.invalidUTF8) {
            try assembler.receive(WebSocketFrame(fin: false, opcode: .text, payload: [0x41, 0xC0]))
        }
        // A message ending mid code point.
        var truncated = WebSocketMessageAssembler(maximumMessageSize: 100)
        _ = try truncated.receive(WebSocketFrame(fin: false, opcode: .text, payload: [0x41]))
        #expect(throws: WebSocketError.invalidUTF8) {
            try truncated.receive(WebSocketFrame(opcode: .continuation, payload: [0xE2, 0x82]))
        }
    }

    @Test func messagesOverTheLimitAreRefused() throws {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 10)
        _ = try assembler.receive(WebSocketFrame(fin: false, opcode: .binary, payload: Array(repeating: 0, count: 6)))
        #expect(throws: WebSocketError.messageTooLarge(limit: 10)) {
            try assembler.receive(WebSocketFrame(opcode: .continuation, payload: Array(repeating: 0, count: 5)))
        }
    }

    @Test func closePayloadsAreChecked() throws {
        var assembler = WebSocketMessageAssembler(maximumMessageSize: 10)
        #expect(try assembler.receive(WebSocketFrame(opcode: .close)) == .close(code: nil, reason: ""))
        #expect(
            try assembler.receive(WebSocketFrame(opcode: .close, payload: [0x03, 0xE9] + Array("bye".utf8)))
                == .close(code: .goingAway, reason: "bye"))
        #expect(throws: WebSocketError.self) { try assembler.receive(WebSocketFrame(opcode: .close, payload: [0x03])) }
        for code: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000] {
            #expect(throws: WebSocketError.self) {
                try assembler.receive(WebSocketFrame(opcode: .close, payload: [UInt8(code >> 8), UInt8(code & 0xFF)]))
            }
        }
        #expect(throws: WebSocketError.invalidUTF8) {
            try assembler.receive(WebSocketFrame(opcode: .close, payload: [0x03, 0xE8, 0xFF]))
        }
        // Our own close payload never exceeds 125 bytes and cuts at a character boundary.
        let payload = WebSocketMessageAssembler.closePayload(code: .normalClosure, reason: String(repeating: "é", count: 100))
        #expect(payload.count == 124)
        #expect(UTF8Validator.isValid(payload[2...]))
    }
}
