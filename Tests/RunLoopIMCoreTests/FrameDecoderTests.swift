import Testing

@testable import RunLoopIMCore

@Suite("Frame codec")
struct FrameDecoderTests {
    @Test("a heartbeat is a bare 16-byte header in network byte order")
    func heartbeatIsSmallest() {
        let bytes = IMFrame(command: .heartbeat, serial: 0x0102_0304).encoded()
        #expect(bytes == [0, 0, 0, 0, 0, 1, 0, 1, 1, 2, 3, 4, 0, 0, 0, 0])
        var message = IMChatMessage()
        message.id = "x"
        #expect(IMFrame(command: .send, serial: 1, message: message).encoded().count > bytes.count)
    }

    @Test("a header's bytes, appended or laid out on the stack, are each field big-endian at its offset")
    func headerFieldsAtTheirOffsets() {
        let header = FrameHeader(bodyLength: 0x1122_3344, version: 0x5566, command: 0x7788, serial: 0x99AA_BBCC, code: 0xDDEE_FF01)
        let wire: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF, 0x01]
        var appended: [UInt8] = [0xF0]
        header.append(to: &appended)
        #expect(appended == [0xF0] + wire)
        #expect(header.withEncodedBytes { Array($0) } == wire)
        #expect(wire.withUnsafeBytes { FrameHeader(reading: $0, at: 0) } == header)
    }

    @Test("a body is made in the storage given: its room reused and taken; one a receiver still shares stays as it was")
    func bodyInTheStorageGiven() throws {
        let frames = [
            IMFrame(rawCommand: 7, serial: 1, body: [1, 2, 3]), IMFrame(rawCommand: 7, serial: 2, body: [4, 5]),
            IMFrame(rawCommand: 7, serial: 3, body: [])
        ]
        let stream = frames.flatMap { $0.encoded() }
        var decoder = FrameDecoder()
        decoder.append(Array(stream[..<10]))
        var storage = [UInt8](repeating: 0xAA, count: 64)
        let room = storage.withUnsafeBufferPointer { $0.baseAddress }
        let incomplete = try decoder.nextEvent(bodyStorage: &storage)
        #expect(incomplete == nil)
        #expect(storage.count == 64, "no frame: the storage stays the caller's")
        decoder.append(Array(stream[10...]))
        guard case .frame(var first)? = try decoder.nextEvent(bodyStorage: &storage) else {
            Issue.record("no first frame")
            return
        }
        #expect(first == frames[0])
        #expect(storage.isEmpty && storage.capacity == 0, "the frame took the storage")
        #expect(first.body.withUnsafeBufferPointer { $0.baseAddress } == room, "made in the storage's room")
        // The receiver keeps the body; the reader takes the frame's array back for the next frame.
        let kept = first.body
        swap(&storage, &first.body)
        guard case .frame(let second)? = try decoder.nextEvent(bodyStorage: &storage) else {
            Issue.record("no second frame")
            return
        }
        #expect(second == frames[1])
        #expect(kept == [1, 2, 3], "a shared storage is copied, not written over")
        let third = try decoder.nextEvent(bodyStorage: &storage)
        #expect(third == .frame(frames[2]))
        #expect(try decoder.nextEvent() == nil)
    }

    @Test("between reads a decoder holds no buffer: an array read whole is taken as it is and let go")
    func holdsNothingBetweenReads() throws {
        let frames = [IMFrame(command: .heartbeat, serial: 1), IMFrame(command: .heartbeat, serial: 2)]
        let stream = frames.flatMap { $0.encoded() }
        var decoder = FrameDecoder()
        decoder.append(Array(stream[..<20]))
        #expect(try decoder.next() == frames[0])
        #expect(try decoder.next() == nil)
        #expect(decoder.bufferCapacity >= 20)
        decoder.append(Array(stream[20...]))
        #expect(try decoder.next() == frames[1])
        #expect(decoder.bufferCapacity == 0)
        decoder.append(stream)
        #expect(try decoder.next() == frames[0])
        #expect(try decoder.next() == frames[1])
        #expect(decoder.bufferedByteCount == 0 && decoder.bufferCapacity == 0)
    }

    @Test("frames come out whole whatever the read sizes")
    func reassemblesAcrossReadSizes() throws {
        var message = IMChatMessage()
        message.id = "m1"
        message.user = "bob"
        message.text = String(repeating: "é", count: 300)
        let frames = [
            IMFrame(command: .heartbeat, serial: 1),
            IMFrame(command: .send, serial: 2, message: message),
            IMFrame(command: .sendAck, serial: 2, code: .rateLimited)
        ]
        let stream = frames.flatMap { $0.encoded() }
        for chunk in [1, 2, 3, 7, 15, 16, 17, 100, stream.count] {
            var decoder = FrameDecoder()
            var out: [IMFrame] = []
            var index = 0
            while index < stream.count {
                decoder.append(stream[index..<min(index + chunk, stream.count)])
                index += chunk
                while let frame = try decoder.next() { out.append(frame) }
            }
            #expect(out == frames, "chunk size \(chunk)")
            #expect(decoder.bufferedByteCount == 0)
        }
        #expect(try frames[1].decode(IMChatMessage.self) == message)
    }

    @Test("an oversized length fails before its body arrives, and stays failed")
    func oversizedFrame() throws {
        var decoder = FrameDecoder(maximumBodyLength: 100)
        decoder.append(IMFrame(rawCommand: 7, serial: 1, body: [UInt8](repeating: 0, count: 101)).encoded().prefix(16))
        #expect(throws: IMFrameError.frameTooLarge(length: 101, limit: 100)) { try decoder.next() }
        decoder.append([1, 2, 3])
        #expect(throws: IMFrameError.frameTooLarge(length: 101, limit: 100)) { try decoder.next() }
        #expect(decoder.bufferedByteCount == 0)
        var exact = FrameDecoder(maximumBodyLength: 100)
        exact.append(IMFrame(rawCommand: 7, serial: 1, body: [UInt8](repeating: 0, count: 100)).encoded())
        #expect(try exact.next()?.body.count == 100)
    }

    @Test("a header of an unknown version is refused")
    func unknownVersion() {
        var decoder = FrameDecoder()
        decoder.append(IMFrame(rawCommand: 1, serial: 1, version: 2).encoded())
        #expect(throws: IMFrameError.unsupportedVersion(2)) { try decoder.next() }
        #expect(IMFrameError.unsupportedVersion(2).statusCode == .unsupportedVersion)
    }

    @Test("an undecodable body is a typed error")
    func undecodableBody() {
        let frame = IMFrame(command: .send, serial: 1, body: [0xFF, 0xFF, 0xFF])
        #expect(throws: IMFrameError.self) { try frame.decode(IMChatMessage.self) }
        do {
            _ = try frame.decode(IMChatMessage.self)
        } catch {
            #expect(error.statusCode == .badRequest)
        }
    }

    @Test("unknown command numbers pass through the decoder untouched")
    func unknownCommand() throws {
        var decoder = FrameDecoder()
        decoder.append(IMFrame(rawCommand: 999, serial: 5, code: 77, body: [9]).encoded())
        let frame = try #require(try decoder.next())
        #expect(frame.command == nil && frame.header.command == 999 && frame.header.code == 77 && frame.body == [9])
    }
}
