import RunLoopIMCore
import Testing

@testable import RunLoopChatCluster

/// Stream entries and shards: what every node must agree on.
@Suite("Bus entries and shards")
struct BusEntryTests {
    @Test("every event survives its entry's fields, the message with every field it carries")
    func roundTrip() {
        let message = IMMessage(
            id: "id-1", from: "ann", recipient: .user("bob"), text: "hi\u{0}there", seq: 42, sentAtMilliseconds: 1_700, conversationSeq: 7)
        let inRoom = IMMessage(id: "id-2", from: "ann", recipient: .room("lobby"), text: "hi", seq: 43, sentAtMilliseconds: 1_701, conversationSeq: 3)
        let events: [ClusterEvent] = [
            .message(message), .message(inRoom, membershipSeq: 12), .message(inRoom, membershipSeq: .max),
            .membership(user: "ann", room: "lobby", joined: true, seq: 1),
            .membership(user: "ann", room: "lobby", joined: false, seq: .max),
            .presence(user: "bob", online: true), .presence(user: "bob", online: false), .awayWithNode(user: "bob"), .catchUp
        ]
        for event in events {
            let entry = BusEntry(origin: "node-a", event: event)
            #expect(BusEntry(fields: entry.fields) == entry)
        }
        let fields = BusEntry(origin: "node-a", event: .message(message)).fields
        #expect(fields.prefix(4) == [Array("k".utf8), Array("m".utf8), Array("n".utf8), Array("node-a".utf8)])
    }

    @Test("an entry this version cannot read is skipped, not misread")
    func unreadableEntries() {
        func fields(_ pairs: [(String, String)]) -> [[UInt8]] { pairs.flatMap { [Array($0.0.utf8), Array($0.1.utf8)] } }
        #expect(BusEntry(fields: fields([("k", "x"), ("n", "a")])) == nil)
        #expect(BusEntry(fields: fields([("k", "p"), ("n", "a"), ("u", "bob")])) == nil)
        #expect(BusEntry(fields: fields([("k", "p"), ("n", "a"), ("u", "bob"), ("s", "yes")])) == nil)
        #expect(BusEntry(fields: fields([("k", "m"), ("n", "a"), ("m", "\u{FF}not protobuf")])) == nil)
        #expect(BusEntry(fields: [Array("k".utf8)]) == nil)
        // A membership without its number (an older node's) or with a malformed one: its notice could
        // reach members who joined after it.
        #expect(BusEntry(fields: fields([("k", "j"), ("n", "a"), ("u", "bob"), ("r", "lobby"), ("s", "1")])) == nil)
        #expect(BusEntry(fields: fields([("k", "j"), ("n", "a"), ("u", "bob"), ("r", "lobby"), ("s", "1"), ("q", "-1")])) == nil)
        #expect(
            BusEntry(fields: fields([("k", "j"), ("n", "a"), ("u", "bob"), ("r", "lobby"), ("s", "1"), ("q", "12")]))
                == BusEntry(origin: "a", event: .membership(user: "bob", room: "lobby", joined: true, seq: 12)))
    }

    @Test("a room message's number is field q; an entry without one, or with a malformed one, is a message whose number is not known")
    func messageNumber() {
        let message = IMMessage(id: "id-2", from: "ann", recipient: .room("lobby"), text: "hi", seq: 43, sentAtMilliseconds: 1, conversationSeq: 3)
        let numbered = BusEntry(origin: "a", event: .message(message, membershipSeq: 12)).fields
        #expect(numbered.suffix(2) == [Array("q".utf8), Array("12".utf8)])
        let plain = BusEntry(origin: "a", event: .message(message)).fields
        #expect(!plain.contains(Array("q".utf8)), "a direct message, a resend: no number")
        #expect(BusEntry(fields: plain) == BusEntry(origin: "a", event: .message(message, membershipSeq: nil)))
        #expect(BusEntry(fields: plain + [Array("q".utf8), Array("-3".utf8)]) == BusEntry(origin: "a", event: .message(message)))
    }

    @Test("the shard is FNV-1a of the conversation's key: the same on every node, one stream per conversation")
    func shards() {
        #expect(StreamShards.fnv1a("") == 0xcbf2_9ce4_8422_2325)
        #expect(StreamShards.fnv1a("a") == 0xaf63_dc4c_8601_ec8c)
        let shards = StreamShards(keyspace: ClusterKeyspace(prefix: "t:"), count: 8)
        #expect(shards.keys.first == "t:stream:0")
        #expect(shards.keys.last == "t:stream:7")
        let fromAnn = IMMessage(id: "1", from: "ann", recipient: .user("bob"), text: "", seq: 1, sentAtMilliseconds: 1)
        let fromBob = IMMessage(id: "2", from: "bob", recipient: .user("ann"), text: "", seq: 2, sentAtMilliseconds: 1)
        #expect(shards.shard(of: .message(fromAnn)) == shards.shard(of: .message(fromBob)))
        let roomMessage = IMMessage(id: "3", from: "ann", recipient: .room("lobby"), text: "", seq: 3, sentAtMilliseconds: 1)
        #expect(shards.shard(of: .membership(user: "bob", room: "lobby", joined: true, seq: 3)) == shards.shard(of: .message(roomMessage)))
        #expect(shards.shard(ofKey: "r:lobby") == Int(StreamShards.fnv1a("r:lobby") % 8))
        let used = Set((0..<64).map { shards.shard(ofKey: "r:room\($0)") })
        #expect(used.count == 8)
    }
}
