import SwiftProtobuf
import Testing

@testable import RunLoopIMCore

/// The by-hand reader of PRESENCE notices (PresenceNoticeReader.swift) on its own: it reads the usual
/// layout of a body and of a batch's entries where they lie, and nothing else.
@Suite("PRESENCE notices read off the bytes")
struct PresenceNoticeReaderTests {
    @Test("a batch the server makes is read by hand, entry by entry, names of every kind")
    func usualBatch() throws {
        let users = PresenceWireTests.users + (0..<300).map { "u\($0)" }
        let singles = users.enumerated().map { IMFrame.presence(of: $1, online: $0 % 2 == 0) }
        let batch = try #require(IMFrame.presenceBatches(of: singles, bodyLimit: 1 << 20).first)
        let read = try #require(PresenceNoticeReader.batch(batch.body))
        #expect(read.map(\.user) == users)
        #expect(read.map(\.online) == users.indices.map { $0 % 2 == 0 })
        let generic = try IMPresenceBatch(serializedBytes: batch.body).notices
        #expect(read.map(\.user) == generic.map(\.user))
    }

    @Test("an entry, or a part of a body, read where it lies: the bytes around it are not read")
    func entryInPlace() {
        let body: [UInt8] = [0xFF, 0x0A, 0x02, 0x61, 0x62, 0x10, 0x01, 0xFF]
        let notice = body.withUnsafeBufferPointer { PresenceNoticeReader.notice(in: $0, from: 1, to: 7) }
        #expect(notice?.user == "ab" && notice?.online == true)
        let cut = body.withUnsafeBufferPointer { PresenceNoticeReader.notice(in: $0, from: 1, to: 4) }
        #expect(cut == nil, "the name runs past the entry's end")
    }

    @Test("a batch in another layout is left to the generic decoder")
    func otherBatchLayouts() {
        #expect(PresenceNoticeReader.batch([0x0A, 0x06, 0x10, 0x01, 0x0A, 0x02, 0x61, 0x62]) == nil, "online before user")
        #expect(PresenceNoticeReader.batch([0x0A, 0x03, 0x0A, 0x01, 0x61, 0x18, 0x05]) == nil, "an unknown field")
        #expect(PresenceNoticeReader.batch([0x0A, 0x01, 0x00]) == nil, "a key of field 0")
        #expect(PresenceNoticeReader.batch([])?.isEmpty == true, "no entries")
    }
}
