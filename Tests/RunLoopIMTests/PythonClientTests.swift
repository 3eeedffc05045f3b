import Glibc
import RunLoopChat
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

import struct Foundation.URL

@testable import RunLoopIM
@testable import RunLoopIMCore

/// Issue 10: a client written in Python from docs/PROTOCOL.md and proto/runloopim.proto alone
/// (Tests/PythonClient/imclient.py) logs in and chats with a Swift client — proof that the protocol
/// document is enough.
@Suite("An outside client: Python")
struct PythonClientTests {
    @Test(
        "a Python client written from PROTOCOL.md chats with a Swift client: direct and room messages each seen once, heartbeat, history, logout; a notice it does not know (MEMBERSHIP) ignored; presence batched when it asks, single frames when it does not",
        .enabled(
            if: PythonEnvironment.shared.shouldRun,
            "no python3 that imports the protobuf runtime: pip install -r Tests/PythonClient/requirements.txt, or set RUNLOOPKIT_PYTHON"),
        .timeLimit(.minutes(2)),
        arguments: [true, false]
    )
    func pythonChatsWithSwift(presenceBatches: Bool) async throws {
        let python = PythonEnvironment.shared
        try #require(python.usable, "RUNLOOPKIT_PYTHON is set but unusable: \(python.problem ?? "")")
        let script = PythonEnvironment.directory.appendingPathComponent("chat_with_swift.py").path
        try await onLoopThread {
            let loop = RunLoop.current
            let store = InMemoryIMStore(accounts: ["swift": "pw", "py": "pw"])
            let server = IMServer(store: store)
            let service = ChatService()
            server.applicationHandler = service
            var presence: [(String, Bool)] = []
            server.onPresenceChange = { _, user, online in presence.append((user, online)) }
            try server.listen()
            defer { server.shutdown() }

            let swift = makeClient(clientConfiguration("swift"), port: server.port)
            let log = ClientRecorder()
            let answers = Responses()
            log.attach(to: swift)
            answers.attach(to: swift)
            swift.start()
            try #require(try spin(loop) { swift.state == .online })
            var join = IMRoomRequest()
            join.room = "lobby"
            let joined = try answers.answer(try swift.request(.join, message: join), loop: loop).decode(IMRoomInfo.self)
            try #require(joined.joined && joined.members == 1)

            let child = try PythonProcess(
                python.interpreter,
                arguments: [
                    script, "127.0.0.1", "\(server.port)", "--user", "py", "--password", "pw",
                    "--peer", "swift", "--room", "lobby", "--timeout", "20", "--verbose"
                ] + (presenceBatches ? [] : ["--no-presence-batches"]))
            defer { child.kill() }
            func transcript() -> String {
                "python exit \(child.isRunning ? "(running)" : "\(child.status)")\nstdout:\n\(child.output)\nstderr:\n\(child.errorOutput)"
            }
            func fromPython(_ predicate: (IMMessage) -> Bool) -> [IMMessage] {
                log.messages.filter { $0.from == "py" && predicate($0) }
            }

            // The conversation, driven from the loop while the Python process runs.
            let greeting = "hello py, this is swift"
            let welcome = "welcome to the lobby, py"
            var sentGreeting = false
            var sentWelcome = false
            let finished = try spin(loop, for: .seconds(60)) {
                if !sentGreeting, server.onlineUsers.contains("py") {
                    sentGreeting = true
                    _ = try? swift.send(greeting, to: .user("py"))
                }
                if !sentWelcome, !fromPython({ $0.recipient == .room("lobby") }).isEmpty {
                    // A command newer than the Python client (24), before the message it waits for:
                    // a join stored as another node would, told as its bus would.
                    if case .success(let joined) = store.join(room: "lobby", user: "newcomer") {
                        service.membershipChanged("newcomer", room: "lobby", joined: true, seq: joined.seq, on: server)
                    }
                    sentWelcome = true
                    _ = try? swift.send(welcome, to: .room("lobby"))
                }
                return !child.isRunning
            }
            try #require(finished, "the Python client did not finish within 60 s\n\(transcript())")
            #expect(child.status == 0, "\(transcript())")
            #expect(sentGreeting && sentWelcome, "\(transcript())")

            // Swift saw each Python message exactly once (the IMClient de-duplicates; the Python client
            // must not have sent anything twice under different ids either).
            let direct = fromPython { $0.recipient == .user("swift") }
            let room = fromPython { $0.recipient == .room("lobby") }
            #expect(direct.map(\.text) == ["re: \(greeting)"], "\(log.messages)\n\(transcript())")
            #expect(room.map(\.text) == ["py says hi to lobby"], "\(log.messages)\n\(transcript())")
            #expect(log.messages.count == 2, "\(log.messages)")
            // Both Swift messages were acknowledged by the server, and the Python client acknowledged
            // its DELIVERs: nothing waits in its inbox.
            try #require(try spin(loop) { log.storedCount == 2 })
            #expect(log.failedCount == 0 && log.settledTwice.isEmpty)
            #expect(try store.undelivered(for: "py").isEmpty, "the Python client acknowledged every DELIVER")
            // It logged out: offline, and swift was told so.
            try #require(try spin(loop) { !server.onlineUsers.contains("py") })
            #expect(presence.filter { $0.0 == "py" }.map(\.1) == [true, false])
            // The Python side saw each Swift message once (its own checks) and says so in its summary.
            let summary = child.output.split(separator: "\n").last.map(String.init) ?? ""
            #expect(summary.contains("\"ok\": true") && summary.contains("\"duplicates\": 0"), "\(transcript())")
            #expect(summary.contains("\"ignored_commands\": [24]"), "the MEMBERSHIP notice, ignored as section 3 asks: \(transcript())")
            // Section 8: asked for, batches came and were read as notices (the lobby's snapshot on its
            // JOIN: swift online); not asked for, none came — an unknown command 25 would be listed
            // among the ignored ones above.
            #expect(summary.contains("[\"swift\", true]"), "swift's presence, batched or not: \(transcript())")
            if presenceBatches {
                #expect(
                    summary.contains("\"receives_presence_batches\": true") && !summary.contains("\"presence_batches\": 0"),
                    "LOGIN_ACK agreed and a PRESENCE_BATCH came: \(transcript())")
            } else {
                #expect(
                    summary.contains("\"receives_presence_batches\": false") && summary.contains("\"presence_batches\": 0"),
                    "an older client: single PRESENCE frames only: \(transcript())")
            }
            // It read the large-room size LOGIN_ACK announced (section 8) and judged its room by JOIN_ACK's count.
            #expect(
                summary.contains("\"large_room_members\": 1000") && summary.contains("\"large_rooms\": []"),
                "LOGIN_ACK's large_room_members read, the lobby of 2 not large: \(transcript())")

            swift.close()
            try spin(loop) { swift.state == .closed(.userClosed) }
        }
    }
}
