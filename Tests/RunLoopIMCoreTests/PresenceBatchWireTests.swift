import SwiftProtobuf
import Testing

@testable import RunLoopIMCore

/// PRESENCE_BATCH bodies (IMPresenceBatch+Wire.swift): made from the PRESENCE frames' own bodies,
/// byte for byte what SwiftProtobuf writes for the batch, cut at a bound in order, and read back by
/// hand in the usual layout and by the generic decoder in any other.
@Suite("PRESENCE_BATCH bodies")
struct PresenceBatchWireTests {
    @Test(
        "batches are PresenceBatch's SwiftProtobuf encoding, cut at the bound in order; a notice too big for any batch goes as its single frame, in its place"
    )
    func batchEncoding() throws {
        let singles = (0..<40).map { IMFrame.presence(of: "user\($0)", online: $0 % 3 != 0) }
        let whole = IMFrame.presenceBatches(of: singles, bodyLimit: 16_384)
        #expect(whole.count == 1)
        var generic = IMPresenceBatch()
        generic.notices = try singles.map { try $0.decode(IMPresenceNotice.self) }
        #expect(whole[0].command == .presenceBatch && whole[0].serial == 0)
        #expect(whole[0].body == (try generic.serializedBytes()))

        let cut = IMFrame.presenceBatches(of: singles, bodyLimit: 100)
        #expect(cut.count > 4 && cut.allSatisfy { $0.command == .presenceBatch && $0.body.count <= 100 })
        let read = try cut.flatMap { try $0.presenceBatchNotices() }
        #expect(read.map(\.user) == (0..<40).map { "user\($0)" })
        #expect(read.map(\.online) == (0..<40).map { $0 % 3 != 0 })

        let long = IMFrame.presence(of: String(repeating: "l", count: 64), online: true)
        let mixed = IMFrame.presenceBatches(of: [singles[1], long, singles[2]], bodyLimit: 40)
        #expect(mixed.map(\.command) == [.presenceBatch, .presence, .presenceBatch])
        #expect(mixed[1].body == long.body)
        #expect(IMFrame.presenceBatches(of: [], bodyLimit: 100).isEmpty)
    }

    @Test(
        "notices encoded straight from names make the same frames, byte for byte, as their PRESENCE frames do, cut at every bound alike",
        arguments: [1, 8, 20, 40, 100, 200, 16_384])
    func straightFromNames(bodyLimit: Int) {
        // Empty, one byte, 127 and 128 bytes (a two-byte length), non-ASCII, ordinary.
        let names =
            ["", "a", String(repeating: "n", count: 127), String(repeating: "m", count: 128), "zoë", "мир", "user7", "u"]
            + (0..<30).map { "user\($0)" }
        for online in [true, false] {
            let singles = names.map { IMFrame.presence(of: $0, online: online) }
            var writer = PresenceBatchWriter(bodyLimit: bodyLimit, notices: names.count)
            for name in names { writer.append(user: name, online: online) }
            let made = writer.finish()
            #expect(made == IMFrame.presenceBatches(of: singles, bodyLimit: bodyLimit), "limit \(bodyLimit), online \(online)")
            #expect(writer.finish().isEmpty, "a finished writer holds nothing")
        }
        for name in names {
            #expect(IMPresenceNotice.encodedLength(user: name, online: true) == IMPresenceNotice.encoded(user: name, online: true).count)
            #expect(IMPresenceNotice.encodedLength(user: name, online: false) == IMPresenceNotice.encoded(user: name, online: false).count)
        }
    }

    @Test("a batch in another layout is read as SwiftProtobuf reads it; a broken one is refused as it refuses it")
    func otherLayouts() throws {
        let bodies: [[UInt8]] = [
            [0x0A, 0x06, 0x10, 0x01, 0x0A, 0x02, 0x61, 0x62],  // an entry with online before user
            [0x0A, 0x03, 0x0A, 0x01, 0x61, 0x18, 0x05],  // an unknown field 3 after the entries
            [0x0A, 0x00, 0x0A, 0x03, 0x0A, 0x01, 0x62],  // an empty entry: an offline nobody
            []  // no entries
        ]
        for body in bodies {
            let expected = try IMPresenceBatch(serializedBytes: body).notices.map { "\($0.user) \($0.online)" }
            let read = try IMFrame(command: .presenceBatch, serial: 0, body: body).presenceBatchNotices()
            #expect(read.map { "\($0.user) \($0.online)" } == expected, "\(body)")
        }
        let broken: [[UInt8]] = [
            [0x0A, 0x05, 0x0A, 0x01, 0x61],  // an entry cut short
            [0x0A, 0x04, 0x0A, 0x02, 0xC3, 0x28],  // a user that is not UTF-8
            [0x0A]  // a key without its length
        ]
        for body in broken {
            #expect(throws: IMFrameError.self, "\(body)") { try IMFrame(command: .presenceBatch, serial: 0, body: body).presenceBatchNotices() }
        }
    }
}
