import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// `IMServer.shutdown(completion:)`: the completion comes once the last session has ended, on a later
/// pass of the loop, never inside the call.
@Suite("Server shutdown completion")
struct ShutdownCompletionTests {
    @Test("the completion runs once, after every session ended with shuttingDown, on a later pass")
    func completesAfterTheLastSession() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let server = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let links = (0..<3).map { _ in MemoryLinkPeer() }
            for (index, link) in links.enumerated() {
                server.adopt(link.serverEnd)
                if index > 0 { link.logIn("user\(index)") }  // one session still awaits its login
            }
            var completions = 0
            var sessionsLeftWhenCompleted: Int?
            server.shutdown {
                completions += 1
                sessionsLeftWhenCompleted = server.sessions.count
            }
            #expect(completions == 0, "never inside the call")
            let completedInTime = try loop.runUntil(timeout: .seconds(10)) { completions > 0 }
            #expect(completedInTime)
            try loop.run(.default, timeout: .milliseconds(10))
            #expect(completions == 1)
            #expect(sessionsLeftWhenCompleted == 0)
            for link in links {
                #expect(link.closedFor == .serverShutdown)
                #expect(link.received(.error).last?.header.code == IMStatusCode.shuttingDown.rawValue)
            }
        }
    }

    @Test("a server without sessions completes its shutdown on the loop's next pass")
    func completesWithoutSessions() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let server = IMServer(store: InMemoryIMStore())
            var completed = false
            server.shutdown { completed = true }
            #expect(!completed)
            let completedInTime = try loop.runUntil(timeout: .seconds(10)) { completed }
            #expect(completedInTime)
        }
    }

    @Test("a session adopted while the server stops holds the completion until it ends")
    func aLateSessionHoldsTheCompletion() async throws {
        try await onLoopThread {
            let loop = RunLoop.current
            let server = IMServer(store: InMemoryIMStore())
            let first = MemoryLinkPeer()
            server.adopt(first.serverEnd)
            let late = MemoryLinkPeer()
            // Adopted from inside the shutdown (as an upgrade finishing then would be).
            server.onSessionEnd = { server, _, _ in
                server.onSessionEnd = nil
                server.adopt(late.serverEnd)
            }
            var completed = false
            server.shutdown { completed = true }
            try loop.run(.default, timeout: .milliseconds(20))
            #expect(!completed, "a session is still open")
            #expect(server.sessions.count == 1)
            late.pair.apply(.reset)
            let completedInTime = try loop.runUntil(timeout: .seconds(10)) { completed }
            #expect(completedInTime)
            #expect(server.sessions.isEmpty)
        }
    }
}
