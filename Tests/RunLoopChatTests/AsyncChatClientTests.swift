import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

/// `AsyncChatClient`: requests as async calls with typed answers and refusals, cancellation of a
/// request, presence and messages as streams, and an actor of the application's own pinned to the
/// same loop, called from other threads.
@Suite struct AsyncChatClientTests {
    @Test("join, rooms, history and leave return typed values; a refusal throws its ChatRequestError")
    func requests() async throws {
        let (joined, rooms, pageTexts, refusal, left) = try await onManualClockLoop { loop, clock in
            try loop.run {
                let fixture = ChatFixture(loop: loop, clock: clock)
                let ann = AsyncChatClient.wrapping(ChatClient(connection: fixture.bench.client(user("ann"), start: false)))
                try await AsyncIMClient.startAll(ann.connection)
                let joined = try await ann.join(room: "lobby")
                for index in 0..<3 { try await ann.connection.send("r\(index)", to: .room("lobby")) }
                let rooms = try await ann.rooms()
                let page = try await ann.history(with: .room("lobby"), limit: 2)
                var refusal: ChatRequestError?
                do { _ = try await ann.leave(room: "attic") } catch let error as ChatRequestError { refusal = error }
                let left = try await ann.leave(room: "lobby")
                await AsyncIMClient.closeAll(ann.connection)
                fixture.server.shutdown()
                return (joined, rooms, page.messages.map(\.text), refusal, left)
            }
        }
        #expect(joined == Room(name: "lobby", members: 1, isMember: true))
        #expect(rooms == [Room(name: "lobby", members: 1, isMember: true)])
        #expect(pageTexts == ["r2", "r1"])
        #expect(refusal == .refused(.notAMember))
        #expect(left == Room(name: "lobby", members: 0, isMember: false))
    }

    @Test("cancelling a join ends its wait at once with CancellationError; the server joins all the same")
    func cancelledJoinStillJoins() async throws {
        let (outcome, rooms) = try await onManualClockLoop { loop, clock in
            try loop.run {
                let fixture = ChatFixture(loop: loop, clock: clock)
                let ann = AsyncChatClient.wrapping(ChatClient(connection: fixture.bench.client(user("ann"), start: false)))
                try await AsyncIMClient.startAll(ann.connection)
                let joining = Task(executorPreference: loop) {
                    // Cancelled before the request: it goes out, the wait ends at once.
                    withUnsafeCurrentTask { $0?.cancel() }
                    return try await ann.join(room: "lobby")
                }
                let outcome: String
                do {
                    _ = try await joining.value
                    outcome = "joined"
                } catch {
                    outcome = "\(type(of: error))"
                }
                let rooms = try await ann.rooms()
                await AsyncIMClient.closeAll(ann.connection)
                fixture.server.shutdown()
                return (outcome, rooms)
            }
        }
        #expect(outcome == "CancellationError")
        #expect(rooms == [Room(name: "lobby", members: 1, isMember: true)])
    }

    @Test("messages and presence arrive as streams; a request on a client that never started throws notOnline")
    func streamsAndNotOnline() async throws {
        let (message, presence, notOnline) = try await onManualClockLoop { loop, clock in
            try loop.run {
                let fixture = ChatFixture(loop: loop, clock: clock)
                let ann = AsyncChatClient.wrapping(ChatClient(connection: fixture.bench.client(user("ann"), start: false)))
                let ben = AsyncChatClient.wrapping(ChatClient(connection: fixture.bench.client(user("ben"), start: false)))
                let idle = AsyncChatClient.wrapping(ChatClient(connection: fixture.bench.client(user("cy"), start: false)))
                let inbox = ben.connection.messages
                let presence = ann.presence
                try await AsyncIMClient.startAll(ann.connection)
                try await AsyncIMClient.startAll(ben.connection)
                try await ann.connection.send("hi ben", to: .user("ben"))
                let message = await inbox.first { _ in true }
                let benOnline = await presence.first { $0.user == "ben" }
                var notOnline: ChatRequestError?
                do { _ = try await idle.rooms() } catch let error as ChatRequestError { notOnline = error }
                await AsyncIMClient.closeAll(ann.connection, ben.connection, idle.connection)
                fixture.server.shutdown()
                return (message, benOnline, notOnline)
            }
        }
        #expect(message?.text == "hi ben" && message?.from == "ann")
        #expect(presence == PresenceChange(user: "ben", isOnline: true))
        #expect(notOnline == .notOnline)
    }

    @Test(
        "membership and large-room changes arrive as streams; the announced size, a room's verdict and its last known count can be asked"
    )
    func roomStreams() async throws {
        let (benJoined, cyVerdict, cyKnows, annKnows) = try await onManualClockLoop { loop, clock in
            try loop.run {
                var settings = ChatService.Settings()
                settings.largeRoomMembers = 2
                let fixture = ChatFixture(loop: loop, clock: clock, application: ChatService(settings: settings))
                let ann = AsyncChatClient.wrapping(ChatClient(connection: fixture.bench.client(user("ann"), start: false)))
                let ben = AsyncChatClient.wrapping(ChatClient(connection: fixture.bench.client(user("ben"), start: false)))
                let cy = AsyncChatClient.wrapping(ChatClient(connection: fixture.bench.client(user("cy"), start: false)))
                let annMemberships = ann.memberships
                let cyVerdicts = cy.largeRoomChanges
                try await AsyncIMClient.startAll(ann.connection, ben.connection, cy.connection)
                _ = try await ann.join(room: "town")
                _ = try await ben.join(room: "town")
                let benJoined = await annMemberships.first { _ in true }
                // The third member makes the room large (over 2): cy's own answer says so, and a large
                // room sends no MEMBERSHIP, so ann's last known count stays 2.
                _ = try await cy.join(room: "town")
                let cyVerdict = await cyVerdicts.first { _ in true }
                let cyKnows = (await cy.largeRoomMembers, await cy.isLarge(room: "town"), await cy.lastKnownMembers(of: "town"))
                let annKnows = (await ann.isLarge(room: "town"), await ann.lastKnownMembers(of: "town"))
                await AsyncIMClient.closeAll(ann.connection, ben.connection, cy.connection)
                fixture.server.shutdown()
                return (benJoined, cyVerdict, cyKnows, annKnows)
            }
        }
        #expect(benJoined == MembershipChange(room: "town", user: "ben", joined: true, members: 2))
        #expect(cyVerdict == LargeRoomChange(room: Room(name: "town", members: 3, isMember: true), isLarge: true))
        #expect(cyKnows.0 == 2 && cyKnows.1 && cyKnows.2 == 3)
        #expect(!annKnows.0 && annKnows.1 == 2)
    }

    /// The application's own actor on the chat client's loop: it counts the messages it is handed
    /// and answers each, touching its state only on the loop's thread.
    actor Responder {
        nonisolated let loop: RunLoop
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
        let chat: AsyncChatClient
        private(set) var answered = 0
        private(set) var callsOffTheLoopThread = 0

        init(loop: RunLoop, chat: AsyncChatClient) {
            self.loop = loop
            self.chat = chat
        }

        func answer(_ message: ChatMessage) async throws {
            if !loop.isCurrentThread { callsOffTheLoopThread += 1 }
            answered += 1
            try await chat.connection.send("#\(answered): \(message.text)", to: .user(message.from))
            if !loop.isCurrentThread { callsOffTheLoopThread += 1 }
        }
    }

    @Test("an actor pinned to the client's loop, called from tasks on other threads, runs on the loop and answers in order")
    func actorOnTheLoopFromOtherThreads() async throws {
        let (answers, offThread, callersAway) = try await onManualClockLoop(autoAdvances: false) { loop, clock in
            try loop.run {
                let fixture = ChatFixture(loop: loop, clock: clock)
                let bot = AsyncChatClient.wrapping(ChatClient(connection: fixture.bench.client(user("bot"), start: false)))
                let ann = AsyncChatClient.wrapping(ChatClient(connection: fixture.bench.client(user("ann"), start: false)))
                let replies = ann.connection.messages
                let questions = bot.connection.messages
                try await AsyncIMClient.startAll(bot.connection, ann.connection)
                let responder = Responder(loop: loop, chat: bot)
                // The bot's reader runs off the loop and hands each message to the actor.
                let reader = Task.detached {
                    var away = true
                    for await question in questions.prefix(10) {
                        away = away && !loop.isCurrentThread
                        try await responder.answer(question)
                    }
                    return away
                }
                for index in 0..<10 { try await ann.connection.send("q\(index)", to: .user("bot")) }
                let answers = await replies.prefix(10).reduce(into: [String]()) { $0.append($1.text) }
                let callersAway = try await reader.value
                let offThread = await responder.callsOffTheLoopThread
                await AsyncIMClient.closeAll(bot.connection, ann.connection)
                fixture.server.shutdown()
                return (answers, offThread, callersAway)
            }
        }
        #expect(answers == (0..<10).map { "#\($0 + 1): q\($0)" })
        #expect(offThread == 0)
        #expect(callersAway)
    }
}

func user(_ name: String) -> IMClientConfiguration {
    var configuration = IMClientConfiguration(user: name, password: "pw")
    configuration.heartbeat = .fixed(.seconds(5))
    configuration.answerTimeout = .seconds(5)
    return configuration
}
