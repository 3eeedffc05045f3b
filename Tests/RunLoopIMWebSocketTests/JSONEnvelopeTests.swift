import RunLoopIM
import RunLoopIMCore
import RunLoopIMWebSocket
import RunLoopWebSocket
import Testing

@Suite("IM JSON envelope")
struct JSONEnvelopeTests {
    @Test("a frame of every command survives encode → decode, bodies in the canonical JSON mapping")
    func roundTrip() throws {
        var message = IMChatMessage()
        message.id = "m-1"
        message.room = "lobby"
        message.text = "héllo \"quoted\""
        message.seq = 18_446_744_073_709_551_615
        let frame = IMFrame(command: .deliver, serial: 4_294_967_295, code: .ok, message: message)
        let text = IMJSONEnvelope.encode(frame)
        #expect(text.contains("\"command\":\"DELIVER\"") && text.contains("\"seq\":\"18446744073709551615\""), "\(text)")
        #expect(try IMJSONEnvelope.decode(text) == frame)
        for command in IMCommand.allCases {
            let plain = IMFrame(command: command, serial: 9, code: .notAMember)
            #expect(try IMJSONEnvelope.decode(IMJSONEnvelope.encode(plain)) == plain, "\(command)")
        }
    }

    @Test("what browsers write: optional code and body, camelCase or proto field names")
    func browserForms() throws {
        let login = try IMJSONEnvelope.decode(#"{"command":"LOGIN","serial":1,"body":{"user":"ann","password":"pw","keepalive_seconds":30}}"#)
        let request = try login.decode(IMLoginRequest.self)
        #expect(login.command == .login && login.serial == 1 && request.user == "ann" && request.keepaliveSeconds == 30)
        let history = try IMJSONEnvelope.decode(#"{"command":"HISTORY","serial":2,"code":0,"body":{"room":"r","beforeSeq":"41","limit":20}}"#)
        #expect(try history.decode(IMHistoryRequest.self).beforeSeq == 41)
        #expect(try IMJSONEnvelope.decode(#"{"command":"HEARTBEAT","serial":3}"#) == IMFrame(command: .heartbeat, serial: 3))
        #expect(try IMJSONEnvelope.decode(#"{"command":"LIST_ROOMS","serial":4,"body":{}}"#) == IMFrame(command: .listRooms, serial: 4))
        // The page asks for PRESENCE_BATCH and reads its notices as a list of PRESENCE bodies.
        let asking = try IMJSONEnvelope.decode(#"{"command":"LOGIN","serial":5,"body":{"user":"ann","presenceBatches":true}}"#)
        #expect(try asking.decode(IMLoginRequest.self).presenceBatches)
        let batch = IMFrame.presenceBatches(of: [.presence(of: "ben", online: true), .presence(of: "cat", online: false)], bodyLimit: 100)[0]
        #expect(
            IMJSONEnvelope.encode(batch)
                == #"{"command":"PRESENCE_BATCH","serial":0,"code":0,"body":{"notices":[{"user":"ben","online":true},{"user":"cat"}]}}"#)
    }

    @Test("strict: each malformed envelope is refused with the status code a binary frame would get, echoing the serial when readable")
    func refusals() {
        let cases: [(String, IMStatusCode, UInt32)] = [
            ("not json", .badRequest, 0),
            ("[1,2]", .badRequest, 0),
            (#"{"command":"SEND"}"#, .badRequest, 0),
            (#"{"command":"SEND","serial":-1}"#, .badRequest, 0),
            (#"{"command":"SEND","serial":1.5}"#, .badRequest, 0),
            (#"{"command":"SEND","serial":true}"#, .badRequest, 0),
            (#"{"command":"SEND","serial":"7"}"#, .badRequest, 0),
            (#"{"command":"SEND","serial":4294967296}"#, .badRequest, 0),
            (#"{"command":"FLY","serial":7}"#, .unknownCommand, 7),
            (#"{"command":7,"serial":7}"#, .badRequest, 7),
            (#"{"command":"SEND","serial":7,"extra":1}"#, .badRequest, 7),
            (#"{"command":"SEND","serial":7,"code":"0"}"#, .badRequest, 7),
            (#"{"command":"SEND","serial":7,"body":"hi"}"#, .badRequest, 7),
            (#"{"command":"SEND","serial":7,"body":{"txet":"typo"}}"#, .badRequest, 7),
            (#"{"command":"SEND","serial":7,"body":{"text":5}}"#, .badRequest, 7),
            (#"{"command":"HEARTBEAT","serial":7,"body":{"x":1}}"#, .badRequest, 7)
        ]
        for (text, code, serial) in cases {
            #expect(throws: IMEnvelopeError.self, "\(text)") { try IMJSONEnvelope.decode(text) }
            do {
                _ = try IMJSONEnvelope.decode(text)
            } catch {
                #expect(error.code == code && error.serial == serial, "\(text): \(error)")
            }
        }
    }

    @Test("a binary message holds exactly one frame; its faults keep their IM codes")
    func binaryMessages() throws {
        let heartbeat = IMFrame(command: .heartbeat, serial: 1).encoded()
        let decoded = try WebSocketFrameLink.frame(fromBinary: heartbeat, maximumBodyLength: 64).get()
        #expect(decoded == IMFrame(command: .heartbeat, serial: 1))
        for bytes in [Array(heartbeat.prefix(10)), heartbeat + heartbeat, [UInt8]()] {
            #expect(throws: IMEnvelopeError.self) { try WebSocketFrameLink.frame(fromBinary: bytes, maximumBodyLength: 64).get() }
        }
        let big = IMFrame(command: .history, serial: 1, body: Array(repeating: 0, count: 65)).encoded()
        #expect(throws: IMEnvelopeError(.frameTooLarge, "frame body of 65 B exceeds the limit of 64 B")) {
            try WebSocketFrameLink.frame(fromBinary: big, maximumBodyLength: 64).get()
        }
    }

    @Test(
        "a SEND over the body limit whose bytes are all in the message is a frame, binary or JSON (the session answers it); one that announces more than it holds, and every other command over the limit, is frameTooLarge"
    )
    func oversizedSend() throws {
        var message = IMChatMessage()
        message.id = "paste-1"
        message.user = "tom"
        message.text = String(repeating: "x", count: 100)
        let send = IMFrame(command: .send, serial: 5, message: message)
        #expect(send.body.count > 64)
        #expect(try WebSocketFrameLink.frame(fromBinary: send.encoded(), maximumBodyLength: 64).get() == send)
        #expect(try WebSocketFrameLink.frame(fromJSON: IMJSONEnvelope.encode(send), maximumBodyLength: 64).get() == send)

        var truncated = send.encoded()
        truncated.removeLast()
        #expect(throws: IMEnvelopeError(.frameTooLarge, "frame body of \(send.body.count) B exceeds the limit of \(send.body.count - 1) B")) {
            try WebSocketFrameLink.frame(fromBinary: truncated, maximumBodyLength: 64).get()
        }
        #expect(throws: IMEnvelopeError.self) { try WebSocketFrameLink.frame(fromBinary: send.encoded() + [0], maximumBodyLength: 64).get() }
        let join = IMFrame(command: .join, serial: 6, body: send.body)
        #expect(throws: IMEnvelopeError(.frameTooLarge, "frame body of \(send.body.count) B exceeds the limit of 64 B")) {
            try WebSocketFrameLink.frame(fromBinary: join.encoded(), maximumBodyLength: 64).get()
        }
        var room = IMRoomRequest()
        room.room = String(repeating: "r", count: 100)
        let joinJSON = IMJSONEnvelope.encode(IMFrame(command: .join, serial: 7, message: room))
        guard case .failure(let error) = WebSocketFrameLink.frame(fromJSON: joinJSON, maximumBodyLength: 64) else {
            Issue.record("an oversized JOIN passed")
            return
        }
        #expect(error.code == .frameTooLarge && error.serial == 7)
    }

    @Test(
        "a key written twice in one object — at the top level, in the body, deeper, spelled with an escape, or a field under both its names — is badRequest, echoing the serial unless the serial is the repeated key; the same key in different objects is not"
    )
    func duplicateKeys() throws {
        let refused: [(String, UInt32)] = [
            (#"{"command":"SEND","serial":7,"serial":8}"#, 0),
            (#"{"command":"SEND","serial":7,"serial":7}"#, 0),
            (#"{"command":"SEND","command":"LOGIN","serial":7}"#, 7),
            (#"{"command":"HEARTBEAT","serial":7,"code":0,"code":0}"#, 7),
            (#"{"command":"SEND","serial":7,"body":{},"body":{"text":"x"}}"#, 7),
            (#"{"command":"SEND","serial":7,"body":{"id":"a","text":"hi","text":"bye"}}"#, 7),
            (#"{"command":"SEND","serial":7,"body":{"id":"a","text":"hi","te\u0078t":"bye"}}"#, 7),
            (#"{"command":"DELIVER_ACK","serial":7,"body":{"seqs":["1"],"seqs":["2"]}}"#, 7),
            (#"{"command":"HISTORY_PAGE","serial":7,"body":{"messages":[{"id":"a","id":"b"}]}}"#, 7),
            (#"{ "command" : "SEND" , "serial" : 7 , "serial" : 7 }"#, 0),
            // One field under its .proto name and its JSON name: the Protocol Buffers decoder would take the last.
            (#"{"command":"LOGIN","serial":7,"body":{"user":"a","keepaliveSeconds":1,"keepalive_seconds":2}}"#, 7),
            (#"{"command":"HISTORY","serial":7,"body":{"room":"r","before_seq":"1","beforeSeq":"2"}}"#, 7)
        ]
        for (text, serial) in refused {
            #expect(throws: IMEnvelopeError.self, "\(text)") { try IMJSONEnvelope.decode(text) }
            do {
                _ = try IMJSONEnvelope.decode(text)
            } catch {
                #expect(error.code == .badRequest && error.serial == serial && error.reason.contains("twice"), "\(text): \(error)")
            }
        }
        let page = try IMJSONEnvelope.decode(#"{"command":"HISTORY_PAGE","serial":7,"body":{"messages":[{"id":"a"},{"id":"b","text":"id"}]}}"#)
        #expect(try page.decode(IMHistoryPage.self).messages.map(\.id) == ["a", "b"])
        let quoted = try IMJSONEnvelope.decode(#"{"command":"SEND","serial":7,"body":{"id":"serial","text":"{\"text\":1,\"text\":2}\\"}}"#)
        #expect(try quoted.decode(IMChatMessage.self).text == #"{"text":1,"text":2}\"#)
    }

    @Test("session end reasons map to close codes: 1000 logout, 1001 shutdown, 1009 too large, 1008 other IM errors")
    func closeCodes() {
        #expect(WebSocketFrameLink.closeCode(for: .loggedOut) == .normalClosure)
        #expect(WebSocketFrameLink.closeCode(for: .serverShutdown) == .goingAway)
        #expect(WebSocketFrameLink.closeCode(for: .protocolError(.frameTooLarge, "")) == .messageTooBig)
        #expect(WebSocketFrameLink.closeCode(for: .protocolError(.badRequest, "")) == .policyViolation)
        #expect(WebSocketFrameLink.closeCode(for: .loginTimeout) == .policyViolation)
        #expect(WebSocketFrameLink.closeCode(for: .keepaliveExpired(silentFor: .seconds(3))) == .policyViolation)
    }
}

/// PROTOCOL.md §13: the ERROR echoes `serial` whenever it could be read — also for a bad `code`.
@Test("a bad code is refused with the serial that was read")
func aBadCodeStillEchoesTheSerial() {
    #expect(throws: IMEnvelopeError(.badRequest, "\"code\" must be an integer 0...4294967295", serial: 3)) {
        try IMJSONEnvelope.decode(#"{"command":"HEARTBEAT","serial":3,"code":"x"}"#)
    }
}
