import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// The server's hook for the application's requests (JOIN, LEAVE, LIST_ROOMS, HISTORY).
@Suite("Application requests reach the registered handler")
struct ApplicationHandlerTests {
    /// Answers every request with its answer command and a code of its own choosing, and remembers
    /// who asked what.
    final class RecordingHandler: IMApplicationHandler {
        var asked: [(user: String, command: IMCommand?)] = []

        func answer(_ request: IMFrame, from user: String, on server: IMServer, reply: @escaping (IMFrame) -> Void) throws(IMFrameError) {
            asked.append((user, request.command))
            reply(IMFrame(command: .roomList, serial: request.serial, code: .internalError))
        }
    }

    @Test("without a handler, JOIN is a command the server does not know: ERROR unknownCommand with its serial, then close")
    func noHandlerIsUnknownCommand() async throws {
        try await onLoopThread {
            let server = IMServer(store: InMemoryIMStore())
            let link = MemoryLinkPeer()
            server.adopt(link.serverEnd)
            link.logIn("ann")
            link.send(PageLimitTests.join("lobby", serial: 7))
            let error = try #require(link.received(.error).last)
            #expect(error.code == .unknownCommand && error.serial == 7)
            #expect(link.received(.joinAck).isEmpty && !link.isOpen)
        }
    }

    @Test("each application request goes to the handler with the logged-in user, and its answer to the client; SEND does not")
    func handlerAnswers() async throws {
        try await onLoopThread {
            let server = IMServer(store: InMemoryIMStore())
            let handler = RecordingHandler()
            server.applicationHandler = handler
            let link = MemoryLinkPeer()
            server.adopt(link.serverEnd)
            link.logIn("ann")
            link.send(PageLimitTests.join("lobby", serial: 3))
            link.send(IMFrame(command: .history, serial: 4))
            var message = IMChatMessage()
            message.id = "m1"
            message.user = "ben"
            link.send(IMFrame(command: .send, serial: 5, message: message))
            #expect(handler.asked.map(\.user) == ["ann", "ann"] && handler.asked.map(\.command) == [.join, .history])
            #expect(link.received(.roomList).map(\.serial) == [3, 4] && link.received(.roomList).allSatisfy { $0.code == .internalError })
            #expect(link.received(.sendAck).count == 1 && link.isOpen)
        }
    }
}
