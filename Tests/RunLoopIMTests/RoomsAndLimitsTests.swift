import RunLoopChat
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore
@testable import RunLoopIMSQLite

/// Answers to application requests, collected by serial.
final class Responses {
    var frames: [UInt32: Result<IMFrame, IMDisconnectReason>] = [:]
    var notices: [IMPresenceNotice] = []

    func attach(to client: IMClient) {
        client.onResponse = { [weak self] _, serial, result in self?.frames[serial] = result }
        client.onNotice = { [weak self] _, frame in
            if let notice = try? frame.decode(IMPresenceNotice.self) { self?.notices.append(notice) }
        }
    }

    func answer(_ serial: UInt32, loop: RunLoop) throws -> IMFrame {
        try #require(try spin(loop) { self.frames[serial] != nil })
        return try frames[serial]!.get()
    }
}

@Suite("Rooms, history, presence and limits")
struct RoomsAndLimitsTests {
    @Test("join, list, room fan-out to every member but the sender, leave, and history paged by sequence", arguments: StoreKind.allCases)
    func roomsAndHistory(kind: StoreKind) async throws {
        try await onManualClockLoop { loop, _ in
            let store = try TestStore(kind)
            let server = IMServer(store: store.server)
            server.applicationHandler = ChatService()
            let users = ["ann", "ben", "cid"]
            let clients = users.map { makeClient(clientConfiguration($0), server: server) }
            let logs = clients.map { _ in ClientRecorder() }
            let answers = clients.map { _ in Responses() }
            for (index, client) in clients.enumerated() {
                logs[index].attach(to: client)
                answers[index].attach(to: client)
                client.start()
            }
            try #require(try spin(loop) { clients.allSatisfy { $0.state == .online } })
            var join = IMRoomRequest()
            join.room = "lobby"
            for (index, client) in clients.enumerated() {
                let info = try answers[index].answer(try client.request(.join, message: join), loop: loop).decode(IMRoomInfo.self)
                #expect(info.name == "lobby" && info.joined && info.members == UInt32(index + 1))
            }
            let list = try answers[2].answer(try clients[2].request(.listRooms, message: IMRoomRequest()), loop: loop).decode(IMRoomList.self)
            #expect(list.rooms.map(\.name) == ["lobby"] && list.rooms[0].members == 3)

            for index in 0..<7 { try clients[0].send("room \(index)", to: .room("lobby")) }
            try #require(try spin(loop) { logs[1].messages.count == 7 && logs[2].messages.count == 7 && logs[0].storedCount == 7 })
            #expect(logs[0].messages.isEmpty, "the sender does not get its own room message")
            #expect(logs[2].messages.map(\.text) == (0..<7).map { "room \($0)" } && logs[2].messages.allSatisfy { $0.recipient == .room("lobby") })

            // History, three at a time, newest first.
            var pages: [[String]] = []
            var before: UInt64 = 0
            while true {
                var request = IMHistoryRequest()
                request.room = "lobby"
                request.beforeSeq = before
                request.limit = 3
                let page = try answers[1].answer(try clients[1].request(.history, message: request), loop: loop).decode(IMHistoryPage.self)
                pages.append(page.messages.map(\.text))
                guard page.moreAvailable, let last = page.messages.last else { break }
                before = last.seq
            }
            #expect(pages == [["room 6", "room 5", "room 4"], ["room 3", "room 2", "room 1"], ["room 0"]])

            var leave = IMRoomRequest()
            leave.room = "lobby"
            let left = try answers[2].answer(try clients[2].request(.leave, message: leave), loop: loop)
            #expect(try left.decode(IMRoomInfo.self).members == 2)
            let again = try answers[2].answer(try clients[2].request(.leave, message: leave), loop: loop)
            #expect(again.code == .notAMember)
            var history = IMHistoryRequest()
            history.room = "lobby"
            #expect(try answers[2].answer(try clients[2].request(.history, message: history), loop: loop).code == .notAMember)
            try clients[0].send("after leave", to: .room("lobby"))
            try #require(try spin(loop) { logs[1].messages.count == 8 })
            try loop.run(.default, timeout: .milliseconds(50))
            #expect(logs[2].messages.count == 7)

            // Direct-message history pairs both directions.
            try clients[0].send("dm 1", to: .user("ben"))
            try clients[1].send("dm 2", to: .user("ann"))
            try #require(try spin(loop) { logs[0].storedCount == 9 && logs[1].storedCount == 1 })
            var dm = IMHistoryRequest()
            dm.user = "ben"
            let dms = try answers[0].answer(try clients[0].request(.history, message: dm), loop: loop).decode(IMHistoryPage.self)
            #expect(dms.messages.map(\.text) == ["dm 2", "dm 1"] && !dms.moreAvailable)
            for client in clients { client.close() }
            try spin(loop) { server.onlineUsers.isEmpty }
            server.shutdown()
        }
    }

    @Test("presence notices reach a user who shares a room with someone who logs in and when they are gone")
    func presence() async throws {
        try await onManualClockLoop { loop, _ in
            let store = InMemoryIMStore()
            for user in ["watcher", "visitor"] { _ = store.join(room: "r", user: user) }
            let server = IMServer(store: store)
            server.applicationHandler = ChatService()
            let watcher = makeClient(clientConfiguration("watcher"), server: server)
            let seen = Responses()
            seen.attach(to: watcher)
            watcher.start()
            try #require(try spin(loop) { watcher.state == .online })
            let visitor = makeClient(clientConfiguration("visitor"), server: server)
            visitor.start()
            try #require(try spin(loop) { seen.notices.count == 1 })
            visitor.close()
            try #require(try spin(loop) { seen.notices.count == 2 })
            #expect(seen.notices.map { "\($0.user) \($0.online)" } == ["visitor true", "visitor false"])
            watcher.close()
            server.shutdown()
        }
    }

    @Test("sessions per user: the one over the limit is refused with tooManyConnections, for now: it gets in once another leaves")
    func sessionsPerUser() async throws {
        try await onManualClockLoop { loop, _ in
            var settings = IMServer.Settings()
            settings.maximumSessionsPerUser = 2
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            server.applicationHandler = ChatService()
            let clients = (0..<3).map { _ in makeClient(clientConfiguration("same"), server: server) }
            clients[0].start()
            clients[1].start()
            try #require(try spin(loop) { clients[0].state == .online && clients[1].state == .online })
            let log = ClientRecorder()
            log.attach(to: clients[2])
            clients[2].start()
            try #require(try spin(loop) { !log.disconnects.isEmpty })
            #expect(log.disconnects[0].1 == .loginRefused(.tooManyConnections, "same already has 2 sessions"))
            if case .closed = clients[2].state { Issue.record("a refusal for now ended the client") }
            clients[0].close()
            try #require(try spin(loop) { clients[2].state == .online }, "it gets in once another session left")
            for client in clients { client.close() }
            server.shutdown()
        }
    }

    @Test("total connections: the one over the limit gets ERROR tooManyConnections and retries later")
    func totalConnections() async throws {
        try await onManualClockLoop { loop, _ in
            var settings = IMServer.Settings()
            settings.maximumConnections = 1
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            server.applicationHandler = ChatService()
            let first = makeClient(clientConfiguration("first"), server: server)
            first.start()
            try #require(try spin(loop) { first.state == .online })
            let second = makeClient(clientConfiguration("second"), server: server)
            let log = ClientRecorder()
            log.attach(to: second)
            second.start()
            try #require(try spin(loop) { !log.disconnects.isEmpty })
            #expect(log.disconnects[0].1 == .serverError(.tooManyConnections, "server full"))
            first.close()
            try #require(try spin(loop) { second.state == .online }, "it gets in once the first one left")
            second.close()
            server.shutdown()
        }
    }

    @Test("messages per second: over the limit a SEND is refused with a retry time, and every message still gets through once")
    func rateLimit() async throws {
        // A manual clock: on real time a slow enough machine (the thread sanitizer under a full suite)
        // spends so long per SEND that the bucket refills and nothing is ever refused.
        try await onManualClockLoop { loop, _ in
            var settings = IMServer.Settings()
            settings.session.maximumMessagesPerSecond = 200
            settings.session.messageBurst = 5
            let store = InMemoryIMStore()
            let server = IMServer(store: store, settings: settings)
            server.applicationHandler = ChatService()
            var sends = 0
            let sender = makeClient(clientConfiguration("fast"), server: server)
            let log = ClientRecorder()
            log.attach(to: sender)
            sender.onDelivery = { [weak log] _, id, state in
                if case .sent(let attempt) = state {
                    sends += 1
                    #expect(attempt == 1, "a rate-limited send does not count as an attempt")
                }
                log?.deliveries[id, default: []].append(state)
            }
            sender.start()
            try #require(try spin(loop) { sender.state == .online })
            let start = loop.now
            for index in 0..<40 { try sender.send("\(index)", to: .user("slow")) }
            try #require(try spin(loop) { log.storedCount == 40 })
            let elapsed = loop.now - start
            #expect(log.failedCount == 0 && log.settledTwice.isEmpty)
            #expect(sends > 40, "some SENDs were refused and sent again (\(sends) sends)")
            #expect(elapsed >= .milliseconds(150), "40 messages at 200/s after a burst of 5 take at least 175 ms, took \(elapsed)")
            let inbox = try store.undelivered(for: "slow").map(\.text)
            #expect(inbox == (0..<40).map { "\($0)" } || Set(inbox) == Set((0..<40).map { "\($0)" }))
            sender.close()
            server.shutdown()
        }
    }
}

@Suite("Login deadline")
struct LoginDeadlineTests {
    @Test("a connection that never logs in is told loginTimeout and closed when the deadline passes")
    func loginDeadline() async throws {
        try await onManualClockLoop { loop, _ in
            var settings = IMServer.Settings()
            settings.session.loginTimeout = .seconds(10)
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            server.applicationHandler = ChatService()
            var ended: [IMSessionEndReason] = []
            var endedAt = LoopInstant.distantFuture
            server.onSessionEnd = { _, _, reason in
                ended.append(reason)
                endedAt = loop.now
            }
            // A connection that opens and never says a word.
            let silent = MemoryLinkPeer(loop: loop)
            let opened = loop.now
            server.adopt(silent.serverEnd)
            try #require(try spin(loop, for: .seconds(60)) { silent.closeReason != nil })
            #expect(ended == [.loginTimeout])
            #expect(silent.received.map(\.command) == [.error] && silent.received.first?.code == .loginTimeout)
            #expect(silent.closeReason == .peerClosed)
            #expect(endedAt - opened == .seconds(10))
            server.shutdown()
        }
    }
}
