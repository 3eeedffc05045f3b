import Foundation
import RunLoopChat
import RunLoopIMTesting
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import SwiftProtobuf
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore
@testable import RunLoopIMSQLite

/// Issue 18 §2 and §7: answers are cut to fit the frame limit in bytes, the room list is paged, rooms
/// per user are capped, room names and message ids have stated limits.
@Suite("Pages, names and ids within limits")
struct PageLimitTests {
    static func request(_ command: IMCommand, _ message: some SwiftProtobuf.Message, serial: UInt32) -> IMFrame {
        IMFrame(command: command, serial: serial, message: message)
    }

    static func join(_ room: String, serial: UInt32) -> IMFrame {
        var request = IMRoomRequest()
        request.room = room
        return IMFrame(command: .join, serial: serial, message: request)
    }

    @Test(
        "1,100 rooms with 64-character names: every ROOM_LIST page fits the limit, and the pages list every room once, in order",
        arguments: StoreKind.allCases)
    func roomListIsPaged(kind: StoreKind) async throws {
        try await onLoopThread {
            let store = try TestStore(kind)
            // Under a sanitizer 300 rooms, and a quarter of the frame limit so that they still take
            // more than three pages: each JOIN asks the user's presence audience anew, over every room
            // joined so far, so the 1,100 cost the square of that (80 s of the thread sanitizer's CI
            // run, three minutes of AddressSanitizer's).
            var settings = IMServer.Settings()
            settings.maximumFrameBody = scaledUnderSanitizers(plain: settings.maximumFrameBody, sanitized: settings.maximumFrameBody / 4)
            let server = IMServer(store: store.server, settings: settings)
            server.applicationHandler = ChatService()
            let link = store.peer()
            server.adopt(link.serverEnd)
            link.logIn("hoarder")
            // 64 code points of a 3-byte character: 192 bytes a name.
            let roomCount = scaledUnderSanitizers(plain: 1100, sanitized: 300)
            let names = (0..<roomCount).map { index in String(format: "%04d", index) + String(repeating: "語", count: 60) }
            for (index, name) in names.enumerated() { link.send(Self.join(name, serial: UInt32(10 + index))) }
            #expect(link.received(.joinAck).allSatisfy { $0.header.code == 0 })
            var listed: [String] = []
            var after = ""
            for serial in UInt32(5000)... {
                var request = IMListRoomsRequest()
                request.after = after
                request.limit = 500
                link.send(Self.request(.listRooms, request, serial: serial))
                let answer = try #require(link.received(.roomList).last)
                #expect(answer.body.count <= server.settings.maximumFrameBody)
                let page = try answer.decode(IMRoomList.self)
                listed += page.rooms.map(\.name)
                guard page.moreAvailable, let last = page.rooms.last else { break }
                after = last.name
            }
            #expect(listed == names)
            #expect(link.received(.roomList).count > 3, "cut by bytes, not only by count")
        }
    }

    @Test("rooms per user are capped: JOIN beyond the cap gets tooManyRooms; rejoining a room already joined does not count")
    func roomsPerUserCapped() async throws {
        try await onLoopThread {
            var settings = IMServer.Settings()
            settings.maximumRoomsPerUser = 3
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            server.applicationHandler = ChatService()
            let link = MemoryLinkPeer()
            server.adopt(link.serverEnd)
            #expect(link.logIn("ann").flatMap { try? $0.decode(IMLoginResponse.self).limits.maxRoomsPerUser } == 3)
            for (serial, room) in ["a", "b", "c", "a", "d"].enumerated() { link.send(Self.join(room, serial: UInt32(serial + 2))) }
            #expect(link.received(.joinAck).map(\.code) == [.ok, .ok, .ok, .ok, .tooManyRooms])
            #expect(link.isOpen)
        }
    }

    @Test("a history page of near-limit messages is cut to fit the frame limit and paging still reaches every message")
    func historyIsCutToFit() async throws {
        try await onLoopThread {
            let store = InMemoryIMStore()
            let server = IMServer(store: store)
            server.applicationHandler = ChatService()
            let link = MemoryLinkPeer()
            server.adopt(link.serverEnd)
            link.logIn("ann")
            link.send(Self.join("big", serial: 2))
            for index in 0..<7 {
                let message = IMMessage(
                    id: "h-\(index)", from: "", recipient: .room("big"), text: String(repeating: "h", count: 30_000), seq: 0, sentAtMilliseconds: 0)
                _ = store.store(message, from: "ann", nowMilliseconds: 1)
            }
            var seen = 0
            var before: UInt64 = 0
            var pages = 0
            for serial in UInt32(100)..<UInt32(120) {
                var request = IMHistoryRequest()
                request.room = "big"
                request.beforeSeq = before
                link.send(Self.request(.history, request, serial: serial))
                let answer = try #require(link.received(.historyPage).last)
                #expect(answer.body.count <= server.settings.maximumFrameBody)
                let page = try answer.decode(IMHistoryPage.self)
                pages += 1
                seen += page.messages.count
                guard page.moreAvailable, let oldest = page.messages.last else { break }
                before = oldest.seq
            }
            #expect(seen == 7 && pages == 4, "two 30 KB messages a page")
        }
    }

    @Test("room names: 1-64 code points, no format, bidi, separator or control characters")
    func roomNames() {
        #expect(RoomName.isValid("lobby") && RoomName.isValid(String(repeating: "語", count: 64)))
        #expect(!RoomName.isValid(String(repeating: "a", count: 65)))
        // 64 "characters" a person sees, each with combining marks: far more than 64 code points.
        #expect(!RoomName.isValid(String(repeating: "e\u{301}\u{302}\u{303}", count: 64)))
        for bad in ["a\u{200B}b", "evil\u{202E}gpj", "\u{FEFF}bom", "line\u{2028}break", "tab\tbed", " padded", ""] {
            #expect(!RoomName.isValid(bad), "\(bad.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test("a message id over 128 bytes is refused with badRequest and never stored")
    func messageIDLimit() async throws {
        try await onLoopThread {
            let store = InMemoryIMStore()
            let server = IMServer(store: store)
            server.applicationHandler = ChatService()
            let link = MemoryLinkPeer()
            server.adopt(link.serverEnd)
            link.logIn("ann")
            for (serial, length) in [(2, 128), (3, 129), (4, 60_000)] {
                var message = IMChatMessage()
                message.id = String(repeating: "i", count: length)
                message.user = "bob"
                link.send(IMFrame(command: .send, serial: UInt32(serial), message: message))
            }
            #expect(link.received(.sendAck).map(\.code) == [.ok, .badRequest, .badRequest])
            #expect(store.storedCount == 1 && link.isOpen)
        }
    }
}
