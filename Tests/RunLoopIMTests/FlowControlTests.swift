import RunLoopChat
import RunLoopIMTesting
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore
@testable import RunLoopIMSQLite

/// Issue 18 §1: a backlog of any size arrives in full over one login, a window at a time; a reader
/// that stops reading is paused, not killed; a client that asks and never reads is told `tooSlow`.
@Suite("Flow-controlled delivery")
struct FlowControlTests {
    static func message(_ index: Int, bytes: Int, to user: String) -> IMMessage {
        IMMessage(id: "m-\(index)", from: "", recipient: .user(user), text: String(repeating: "x", count: bytes), seq: 0, sentAtMilliseconds: 0)
    }

    @Test(
        "a 36 MB offline backlog (600 × 60 KB) goes out a window at a time, in seq order, once each, and all of it over one login",
        .disabled(if: isRunningUnderThreadSanitizer, "a volume test of one loop: run in the plain pass"),
        arguments: StoreKind.allCases)
    func backlogIsWindowed(kind: StoreKind) async throws {
        try await onLoopThread {
            let store = try TestStore(kind)
            var settings = IMServer.Settings()
            settings.deliveryWindowMessages = 16
            settings.deliveryWindowBytes = 256 * 1024
            let server = IMServer(store: store.server, settings: settings)
            let reader = store.peer()
            server.adopt(reader.serverEnd)
            reader.logIn("bob")
            reader.pair.apply(.reset)
            reader.settle()
            // 600 × 60,000 B while bob is offline, stored as the server stores SENDs (decoding a
            // 60 KB SEND costs ~55 ms in a debug build; the SEND path has its own tests).
            for index in 0..<600 {
                guard case .stored = store.direct.store(Self.message(index, bytes: 60_000, to: "bob"), from: "alice", nowMilliseconds: 1) else {
                    Issue.record("message \(index) not stored")
                    return
                }
            }

            let bob = store.peer()
            server.adopt(bob.serverEnd)
            #expect(bob.logIn("bob")?.header.code == 0)
            var received: [UInt64] = []
            var largestUnacknowledgedBytes = 0
            var rounds = 0
            while received.count < 600, rounds < 2000 {
                rounds += 1
                let fresh = bob.received(.deliver).dropFirst(received.count)
                let bytes = fresh.reduce(0) { $0 + $1.body.count }
                largestUnacknowledgedBytes = max(largestUnacknowledgedBytes, bytes)
                #expect(fresh.count <= 16, "never more than the window's count unacknowledged")
                received += fresh.compactMap(deliveredSeq)
                guard bob.acknowledgeDeliveries() > 0 else { break }
            }
            #expect(received.count == 600, "the whole backlog arrived over one login")
            #expect(received == received.sorted() && Set(received).count == 600, "in seq order, once each")
            #expect(largestUnacknowledgedBytes <= 256 * 1024, "the server held at most one window of it: \(largestUnacknowledgedBytes) B")
            #expect(bob.isOpen)
            #expect(try store.direct.undelivered(for: "bob").isEmpty)
        }
    }

    @Test(
        "a room member who stops acknowledging is paused at the window, stays connected, and gets the rest in order once it reads again",
        arguments: StoreKind.allCases)
    func slowReaderIsPausedNotKilled(kind: StoreKind) async throws {
        try await onLoopThread {
            let store = try TestStore(kind)
            var settings = IMServer.Settings()
            settings.deliveryWindowMessages = 8
            let server = IMServer(store: store.server, settings: settings)
            server.applicationHandler = ChatService()
            let talker = store.peer(), quiet = store.peer()
            for (link, user) in [(talker, "ann"), (quiet, "ben")] {
                server.adopt(link.serverEnd)
                link.logIn(user)
                var join = IMRoomRequest()
                join.room = "busy"
                link.send(IMFrame(command: .join, serial: 2, message: join))
            }
            for index in 0..<50 {
                var message = IMChatMessage()
                message.id = "r-\(index)"
                message.room = "busy"
                message.text = "line \(index)"
                talker.send(IMFrame(command: .send, serial: UInt32(10 + index), message: message))
            }
            #expect(quiet.received(.deliver).count == 8, "paused at the window: nothing more queued for it")
            #expect(quiet.isOpen && server.onlineUsers == ["ann", "ben"])
            while quiet.acknowledgeDeliveries() > 0 {}
            let texts = quiet.received(.deliver).compactMap { try? $0.decode(IMChatMessage.self).text }
            #expect(texts == (0..<50).map { "line \($0)" })
        }
    }

    @Test("a client that leaves the server's output unread gets ERROR tooSlow and is closed; its inbox stays intact", arguments: StoreKind.allCases)
    func unreadOutputEndsWithTooSlow(kind: StoreKind) async throws {
        try await onLoopThread {
            let store = try TestStore(kind)
            let server = IMServer(store: store.server)
            server.applicationHandler = ChatService()
            let alice = store.peer(), bob = store.peer()
            server.adopt(alice.serverEnd)
            alice.logIn("alice")
            server.adopt(bob.serverEnd)
            bob.logIn("bob")
            alice.send(IMFrame(command: .send, serial: 5, message: Self.message(1, bytes: 10, to: "bob")))
            #expect(bob.received(.deliver).count == 1)
            bob.serverEnd.reportedBufferedOutput = server.settings.maximumBufferedOutput
            bob.send(IMFrame(command: .listRooms, serial: 9))
            #expect(bob.received.last?.command == .error && bob.received.last?.code == .tooSlow)
            #expect(bob.closedFor == .tooSlow(bufferedBytes: server.settings.maximumBufferedOutput))
            #expect(try store.direct.undelivered(for: "bob").count == 1, "the unacknowledged message waits for the next login")
        }
    }
}
