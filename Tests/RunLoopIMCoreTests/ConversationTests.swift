import RunLoopIMCore
import Testing

@Suite("Conversations and their sequence")
struct ConversationTests {
    @Test("a direct conversation is the same whichever of its two users writes; a room is its own")
    func directIsSymmetric() {
        #expect(IMConversation.direct(between: "bob", and: "alice") == .direct(between: "alice", and: "bob"))
        #expect(IMConversation(from: "bob", to: .user("alice")) == IMConversation(from: "alice", to: .user("bob")))
        #expect(IMConversation(from: "bob", to: .user("alice")).kind == .direct(first: "alice", second: "bob"))
        #expect(IMConversation(from: "bob", to: .room("alice")) == .room("alice"))
        #expect(IMConversation(from: "bob", to: .room("alice")) != .direct(between: "bob", and: "alice"))
    }

    @Test("storage keys are injective, whatever bytes names hold, and read back")
    func storageKeysRoundTrip() {
        let conversations: [IMConversation] = [
            .room("general"), .room("d:1:ab"), .room(""), .direct(between: "a", and: "bc"), .direct(between: "ab", and: "c"),
            .direct(between: "a:b", and: "c"), .direct(between: "a", and: "b:c"), .direct(between: "x\u{0}y", and: "z"),
            .direct(between: "é", and: "e"), .direct(between: "same", and: "same")
        ]
        #expect(Set(conversations.map(\.storageKey)).count == conversations.count)
        for conversation in conversations {
            #expect(IMConversation(storageKey: conversation.storageKey) == conversation, "\(conversation.storageKey)")
        }
        #expect(IMConversation.direct(between: "bob", and: "alice").storageKey == "d:5:alicebob")
        #expect(IMConversation.room("general").storageKey == "r:general")
    }

    @Test("a text no conversation gives is not a key", arguments: ["", "x:general", "d:", "d:5:abc", "d:-1:ab", "d:x:ab", "d:3:bobalice"])
    func notKeys(text: String) {
        #expect(IMConversation(storageKey: text) == nil)
    }

    @Test("the conversation sequence crosses the wire")
    func wire() {
        let message = IMMessage(
            id: "m1", from: "bob", recipient: .user("alice"), text: "hi", seq: 9, sentAtMilliseconds: 5, conversationSeq: 3)
        #expect(IMMessage(message.wire) == message)
        #expect(message.wire.conversationSeq == 3)
        #expect(message.conversation == .direct(between: "alice", and: "bob"))
    }
}
