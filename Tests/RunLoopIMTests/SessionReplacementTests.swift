import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

@Suite("Session replacement and the per-user limit")
struct SessionReplacementTests {
    func sessions(of user: String, on server: IMServer) -> Int {
        server.sessions.filter { $0.user == user && !$0.isEnded }.count
    }

    func wasReplaced(_ client: LoopLoginClient) -> Bool {
        client.frames.contains { $0.command == .error && $0.code == .sessionReplaced }
    }

    @Test(
        "a client whose link goes half-open 5 times logs in again with its client_instance each time: never refused, the old session gets ERROR sessionReplaced, the node holds one session, presence never flaps"
    )
    func halfOpenFiveTimes() async throws {
        try await onManualClockLoop { loop, _ in
            var settings = IMServer.Settings()
            settings.maximumSessionsPerUser = 4
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            let watcher = makeClient(clientConfiguration("watcher"), server: server)
            let seen = Responses()
            seen.attach(to: watcher)
            watcher.start()
            try #require(try spin(loop) { watcher.state == .online })

            var links: [LoopLoginClient] = []
            for round in 0...5 {
                // The previous link stays open and silent, as a half-open one looks to the server.
                let link = LoopLoginClient("phone", instance: "phone-7f3a", server: server)
                link.start()
                try #require(try spin(loop) { link.isOnline || !link.refusals.isEmpty || link.isClosed }, "round \(round)")
                #expect(
                    link.isOnline, "round \(round): \(link.frames.map { "\($0.command.map { "\($0)" } ?? "?") \($0.code.map { "\($0)" } ?? "?")" })")
                if let previous = links.last {
                    try #require(try spin(loop) { wasReplaced(previous) }, "round \(round): the old session is told")
                }
                #expect(sessions(of: "phone", on: server) == 1, "round \(round)")
                links.append(link)
            }
            try loop.run(.default, timeout: .milliseconds(50))
            let phone = seen.notices.filter { $0.user == "phone" }.map(\.online)
            #expect(phone == [true], "online once, never offline: \(phone)")
            for link in links { link.close() }
            watcher.close()
            server.shutdown()
        }
    }

    @Test("without a client instance the per-user limit holds, and its refusal is for now: LOGIN_ACK tooManyConnections with retry_after_ms")
    func limitWithRetry() async throws {
        try await onManualClockLoop { loop, _ in
            var settings = IMServer.Settings()
            settings.maximumSessionsPerUser = 2
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            let links = (0..<3).map { _ in LoopLoginClient("busy", server: server) }
            for link in links.prefix(2) { link.start() }
            try #require(try spin(loop) { links.prefix(2).allSatisfy(\.isOnline) })
            links[2].start()
            try #require(try spin(loop) { !links[2].refusals.isEmpty })
            let refusal = links[2].refusals[0]
            #expect(refusal.code == .tooManyConnections)
            // The earliest of the others would be dropped for silence in 450 s: capped to a minute.
            #expect(refusal.retryAfterMs == 60_000)
            for link in links { link.close() }
            server.shutdown()
        }
    }

    @Test(
        "an instance's older login still waiting when a newer one arrives never goes online: queued, it is ended at once; being checked, when its check ends; the newest gets in"
    )
    func olderLoginSuperseded() async throws {
        try await onManualClockLoop { loop, _ in
            var settings = IMServer.Settings()
            settings.logins.concurrentChecks = 1
            let server = IMServer(store: InMemoryIMStore(), settings: settings)
            var checks: [(user: String, answer: (IMLoginVerdict) -> Void)] = []
            server.authenticator = { request, verdict in checks.append((request.user, verdict)) }
            let first = LoopLoginClient("tab", instance: "laptop", server: server)
            first.start()
            try #require(try spin(loop) { checks.count == 1 }, "the first is being checked")
            let second = LoopLoginClient("tab", instance: "laptop", server: server)
            second.start()
            try #require(try spin(loop) { server.loginGate.throttle.queue.count == 1 }, "the second waits in the queue")
            let third = LoopLoginClient("tab", instance: "laptop", server: server)
            third.start()
            try #require(try spin(loop) { wasReplaced(second) }, "the queued one ends when the third arrives")
            checks[0].answer(.accepted)
            try #require(try spin(loop) { wasReplaced(first) }, "the checked one ends when its check does")
            #expect(!first.isOnline)
            try #require(try spin(loop) { checks.count == 2 })
            checks[1].answer(.accepted)
            try #require(try spin(loop) { third.isOnline })
            #expect(sessions(of: "tab", on: server) == 1)
            for link in [first, second, third] { link.close() }
            server.shutdown()
        }
    }

    @Test("the canonical name an authenticator answers (acceptedAs) is the session's user: in LOGIN_ACK, online users and replacement")
    func canonicalNames() async throws {
        try await onManualClockLoop { loop, _ in
            let server = IMServer(store: InMemoryIMStore())
            server.authenticator = { request, verdict in verdict(.acceptedAs(user: request.user.lowercased())) }
            let upper = LoopLoginClient("ALICE", instance: "desk", server: server)
            upper.start()
            try #require(try spin(loop) { upper.isOnline })
            #expect(upper.onlineUser == "alice" && server.onlineUsers == ["alice"])
            let mixed = LoopLoginClient("Alice", instance: "desk", server: server)
            mixed.start()
            try #require(try spin(loop) { mixed.isOnline && wasReplaced(upper) }, "same account, same instance")
            #expect(sessions(of: "alice", on: server) == 1)
            let long = LoopLoginClient("alice", instance: String(repeating: "x", count: 65), server: server)
            long.start()
            try #require(try spin(loop) { long.frames.contains { $0.command == .loginAck } })
            #expect(long.frames.first { $0.command == .loginAck }?.code == .badRequest, "client_instance is at most 64 bytes")
            for link in [upper, mixed, long] { link.close() }
            server.shutdown()
        }
    }
}
