import Testing

@testable import RunLoopIMCore

/// Issue 22: every connection holds a decoder inline, so its layout is per-connection memory. The
/// limits are 32-bit and a failure or a skip is one boxed value; these pin that the decoder still
/// skips, fails and remembers exactly as it did when each was its own inline field.
@Suite("Frame decoder footprint")
struct FrameDecoderFootprintTests {
    func sendFrame(serial: UInt32, bodyLength: Int) -> [UInt8] {
        IMFrame(rawCommand: IMCommand.send.rawValue, serial: serial, body: (0..<bodyLength).map { UInt8($0 & 0xFF) })
            .encoded()
    }

    @Test("a decoder is five words: two 32-bit limits, the skippable set, the buffer and its start, one box")
    func size() {
        #expect(MemoryLayout<FrameDecoder>.size <= 40)
    }

    @Test("the limits read back as given, and raising never lowers")
    func limits() {
        var decoder = FrameDecoder(
            maximumBodyLength: 100, skippableBodyLength: Int(UInt32.max), skippableCommands: FrameDecoder.sendOnly)
        #expect(decoder.maximumBodyLength == 100 && decoder.skippableBodyLength == Int(UInt32.max))
        decoder.raiseMaxBodyLength(to: 50)
        #expect(decoder.maximumBodyLength == 100)
        decoder.raiseMaxBodyLength(to: Int(UInt32.max))
        #expect(decoder.maximumBodyLength == Int(UInt32.max))
        #expect(decoder.failedSerial == nil)
    }

    @Test("a skipped body fed a byte at a time keeps its first 256 bytes, and the frame after it comes out whole")
    func skipAcrossReads() throws {
        var decoder = FrameDecoder(maximumBodyLength: 10, skippableBodyLength: 1_000, skippableCommands: FrameDecoder.sendOnly)
        let stream = sendFrame(serial: 7, bodyLength: 600) + sendFrame(serial: 8, bodyLength: 3)
        var events: [FrameDecoder.Event] = []
        for byte in stream {
            decoder.append(CollectionOfOne(byte))
            while let event = try decoder.nextEvent() { events.append(event) }
            #expect(decoder.failedSerial == nil)
        }
        guard events.count == 2, case .oversized(let header, let prefix) = events[0], case .frame(let frame) = events[1] else {
            Issue.record("events: \(events)")
            return
        }
        #expect(header.serial == 7 && header.bodyLength == 600)
        #expect(prefix == (0..<256).map { UInt8($0) })
        #expect(frame.header.serial == 8 && frame.body == [0, 1, 2])
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("a skip that arrives in one read is dropped past the buffer; a skip with frames behind it too")
    func skipInOneRead() throws {
        var decoder = FrameDecoder(maximumBodyLength: 10, skippableBodyLength: 1_000, skippableCommands: FrameDecoder.sendOnly)
        decoder.append(sendFrame(serial: 1, bodyLength: 11) + sendFrame(serial: 2, bodyLength: 20) + sendFrame(serial: 3, bodyLength: 1))
        var serials: [UInt32] = []
        while let event = try decoder.nextEvent() {
            switch event {
            case .oversized(let header, let prefix):
                serials.append(header.serial)
                #expect(prefix.count == Int(header.bodyLength))
            case .frame(let frame): serials.append(frame.header.serial)
            }
        }
        #expect(serials == [1, 2, 3])
    }

    @Test("a failure keeps its error and the serial of the header to blame, and nothing is read after it")
    func failureRemembered() {
        var decoder = FrameDecoder(maximumBodyLength: 10, skippableBodyLength: 20, skippableCommands: FrameDecoder.sendOnly)
        decoder.append(sendFrame(serial: 41, bodyLength: 21))
        #expect(throws: IMFrameError.frameTooLarge(length: 21, limit: 10)) { try decoder.nextEvent() }
        #expect(decoder.failedSerial == 41)
        decoder.append(sendFrame(serial: 42, bodyLength: 1))
        #expect(throws: IMFrameError.frameTooLarge(length: 21, limit: 10)) { try decoder.nextEvent() }
        #expect(decoder.failedSerial == 41 && decoder.bufferedByteCount == 0)

        var strict = FrameDecoder(maximumBodyLength: 10, skippableBodyLength: 20, skippableCommands: FrameDecoder.sendOnly)
        strict.append(sendFrame(serial: 43, bodyLength: 15))
        #expect(throws: IMFrameError.frameTooLarge(length: 15, limit: 10)) { try strict.next() }
        #expect(strict.failedSerial == 43)

        var versioned = FrameDecoder()
        versioned.append(IMFrame(rawCommand: 1, serial: 44, version: 2).encoded())
        #expect(throws: IMFrameError.unsupportedVersion(2)) { try versioned.next() }
        #expect(versioned.failedSerial == 44)
    }
}
