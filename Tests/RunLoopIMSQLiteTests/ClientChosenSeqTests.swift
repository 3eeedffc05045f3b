import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore
@testable import RunLoopIMSQLite

/// A DELIVER_ACK is client input, and a `seq` at or
/// above 2^63 (any client can send one: JSON `"seqs":["9223372036854775808"]`, or a binary varint)
/// once trapped in `Int64(seq)` in `SQLiteIMStore.acknowledge`: the whole node died, every session with it.
@Suite("Client-chosen seqs")
struct ClientChosenSeqTests {
    @Test("acknowledging a seq above Int64.max neither traps nor removes anything")
    func hugeSeq() throws {
        let path = temporaryPath("attack-ack.db")
        defer { removeDatabase(path) }
        let store = try SQLiteIMStore(path: path)
        let message = IMMessage(id: "m1", from: "", recipient: .user("bob"), text: "hi", seq: 0, sentAtMilliseconds: 0)
        _ = store.store(message, from: "alice", nowMilliseconds: 1)
        store.acknowledge([UInt64(Int64.max) + 1, .max], for: "bob")
        #expect(try store.undelivered(for: "bob").count == 1)
    }
}
