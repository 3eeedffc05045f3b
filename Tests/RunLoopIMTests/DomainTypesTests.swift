import RunLoopChat
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// The public API's domain types and their one conversion each to the generated wire messages, and
/// the checks that moved with them out of the stores' wire-typed signatures.
@Suite("Domain types and the wire")
struct DomainTypesTests {
    static let stored = IMMessage(id: "m1", from: "ann", recipient: .room("lobby"), text: "hi", seq: 42, sentAtMilliseconds: 1_700)

    @Test("an IMMessage survives a SEND or DELIVER frame field by field, for both kinds of recipient")
    func messageFrames() throws {
        let direct = IMMessage(id: "m2", from: "ben", recipient: .user("ann"), text: "€ ok", seq: 7, sentAtMilliseconds: 9)
        for message in [Self.stored, direct] {
            #expect(try IMFrame(command: .deliver, serial: 3, message: message).decodeMessage() == message)
            #expect(IMMessage(message.wire) == message)
        }
        let wire = Self.stored.wire
        #expect(wire.room == "lobby" && wire.from == "ann" && wire.seq == 42 && wire.sentAtMs == 1_700)
    }

    @Test("a body that is not a chat message is undecodableBody naming the frame's command")
    func undecodableMessage() {
        let frame = IMFrame(command: .deliver, serial: 1, body: [0xFF, 0xFF, 0xFF])
        do {
            _ = try frame.decodeMessage()
            Issue.record("three 0xFF bytes decoded as a message")
        } catch {
            guard case .undecodableBody(let command, _) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(command == IMCommand.deliver.rawValue)
        }
    }

    @Test("a wire message without a recipient reads as a direct message to an unnamed user")
    func missingRecipient() {
        var wire = Self.stored.wire
        wire.to = nil
        #expect(IMMessage(wire).recipient == .user(""))
    }

    @Test("a LOGIN's fields and an ABANDON outcome (stored with its seq, or not) convert both ways")
    func loginAndAbandon() {
        let login = IMLoginAttempt(user: "ann", password: "pw", keepaliveSeconds: 30, clientName: "test", clientInstance: "i-1")
        #expect(IMLoginAttempt(login.wire) == login)
        let kept = IMAbandonOutcome(id: "a", storedSeq: 5)
        let gone = IMAbandonOutcome(id: "b", storedSeq: nil)
        #expect(kept.wire.accepted && kept.wire.seq == 5 && !gone.wire.accepted && gone.wire.seq == 0)
        #expect(IMAbandonOutcome(kept.wire) == kept && IMAbandonOutcome(gone.wire) == gone)
    }

    @Test("a history page with more to read starts the next one below its smallest seq; without, nowhere")
    func historyPageNextBefore() {
        let older = IMMessage(id: "m0", from: "ann", recipient: .room("lobby"), text: "", seq: 40, sentAtMilliseconds: 0)
        #expect(HistoryPage(messages: [Self.stored, older], moreAvailable: true).nextBefore == 40)
        #expect(HistoryPage(messages: [Self.stored, older], moreAvailable: false).nextBefore == nil)
    }

    @Test("a SEND without a recipient is refused badRequest by the server and never reaches the store")
    func sendWithoutRecipient() async throws {
        try await onLoopThread {
            let store = InMemoryIMStore()
            let server = IMServer(store: store)
            let link = MemoryLinkPeer()
            server.adopt(link.serverEnd)
            link.logIn("ann")
            var message = Self.stored.wire
            message.to = nil
            link.send(IMFrame(command: .send, serial: 5, message: message))
            let ack = try #require(link.received(.sendAck).last)
            #expect(ack.code == .badRequest && ack.serial == 5 && link.isOpen)
            #expect(store.storedCount == 0)
        }
    }

    /// An IM store that keeps no rooms: not a `ChatStore`.
    final class MessagesOnlyStore: SynchronousIMServerStore {
        let inner = InMemoryIMStore()
        func authenticate(_ login: IMLoginAttempt) -> IMLoginVerdict { inner.authenticate(login) }
        func store(_ message: IMMessage, from sender: String, nowMilliseconds: UInt64) -> IMStoreResult {
            inner.store(message, from: sender, nowMilliseconds: nowMilliseconds)
        }
        func abandon(_ ids: [String], from sender: String) -> Result<[IMAbandonOutcome], IMStoreFailure> { inner.abandon(ids, from: sender) }
        func undelivered(for user: String, after: [IMConversation: UInt64], limit: Int) -> Result<[IMMessage], IMStoreFailure> {
            inner.undelivered(for: user, after: after, limit: limit)
        }
        func acknowledge(_ seqs: [UInt64], for user: String) { inner.acknowledge(seqs, for: user) }
    }

    @Test("ChatService over a store that is not a ChatStore answers internalError, with the request's serial")
    func chatServiceNeedsChatStore() async throws {
        try await onLoopThread {
            let server = IMServer(store: MessagesOnlyStore())
            server.applicationHandler = ChatService()
            let link = MemoryLinkPeer()
            server.adopt(link.serverEnd)
            link.logIn("ann")
            link.send(PageLimitTests.join("lobby", serial: 3))
            let answer = try #require(link.received(.joinAck).last)
            #expect(answer.code == .internalError && answer.serial == 3 && answer.body.isEmpty && link.isOpen)
        }
    }
}
