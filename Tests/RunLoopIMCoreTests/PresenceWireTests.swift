import SwiftProtobuf
import Testing

@testable import RunLoopIMCore

/// PRESENCE bodies by hand (IMPresenceNotice+Wire.swift): the same bytes as SwiftProtobuf's, and the
/// same reading of any body, the usual layout by hand and every other by the generic decoder.
@Suite("PRESENCE bodies by hand")
struct PresenceWireTests {
    /// Names of every length class a varint length has (1 and 2 bytes), ASCII and not, and none.
    static let users = [
        "", "u1", "ann", "Zoë 北京", String(repeating: "x", count: 127), String(repeating: "y", count: 128), String(repeating: "é", count: 200)
    ]

    static func generic(_ user: String, _ online: Bool) throws -> [UInt8] {
        var notice = IMPresenceNotice()
        notice.user = user
        notice.online = online
        return try notice.serializedBytes()
    }

    @Test("the encoding is SwiftProtobuf's, byte for byte, and reads back by hand", arguments: users)
    func sameBytes(user: String) throws {
        for online in [false, true] {
            let bytes = IMPresenceNotice.encoded(user: user, online: online)
            #expect(bytes == (try Self.generic(user, online)))
            let read = try #require(IMPresenceNotice.readUsualLayout(bytes))
            #expect(read.user == user && read.online == online)
            let frame = IMFrame.presence(of: user, online: online)
            #expect(frame.command == .presence && frame.serial == 0 && frame.body == bytes)
        }
    }

    @Test("a body in another layout is read as SwiftProtobuf reads it, or refused as it refuses it")
    func otherLayouts() throws {
        let bodies: [[UInt8]] = [
            [0x10, 0x01, 0x0A, 0x02, 0x61, 0x62],  // online before user
            [0x0A, 0x01, 0x61, 0x0A, 0x01, 0x62],  // user twice: the last one counts
            [0x0A, 0x01, 0x61, 0x10, 0x01, 0x10, 0x00],  // online twice
            [0x0A, 0x01, 0x61, 0x18, 0x05],  // an unknown field 3 after them
            [0x10, 0x02],  // online as 2: true
            [0x0A, 0x00],  // an empty user written out
            [0x8A, 0x00, 0x01, 0x61]  // field 1's key in two bytes
        ]
        for body in bodies {
            let expected = try IMPresenceNotice(serializedBytes: body)
            let read = try IMFrame(command: .presence, serial: 0, body: body).presenceNotice()
            #expect(read.user == expected.user && read.online == expected.online, "\(body)")
        }
        let broken: [[UInt8]] = [
            [0x0A, 0x05, 0x61],  // the user cut short
            [0x0A, 0x02, 0xC3, 0x28],  // not UTF-8
            [0x0A, 0x01, 0x61, 0x10],  // online's value missing
            [0x0A, 0x01, 0x61, 0x80]  // a key cut in the middle of its varint
        ]
        for body in broken {
            #expect(IMPresenceNotice.readUsualLayout(body) == nil, "\(body)")
            #expect(throws: IMFrameError.self, "\(body)") { try IMFrame(command: .presence, serial: 0, body: body).presenceNotice() }
        }
    }

    @Test("only the usual layout is read by hand: others go to the generic decoder")
    func handReadsOnlyTheUsualLayout() {
        #expect(IMPresenceNotice.readUsualLayout([]).map { $0.user == "" && !$0.online } == true, "an offline notice of no one")
        #expect(IMPresenceNotice.readUsualLayout([0x10, 0x01, 0x0A, 0x01, 0x61]) == nil)
        #expect(IMPresenceNotice.readUsualLayout([0x0A, 0x01, 0x61, 0x0A, 0x01, 0x62]) == nil)
        #expect(IMPresenceNotice.readUsualLayout([0x0A, 0x01, 0x61, 0x18, 0x05]) == nil)
    }
}
