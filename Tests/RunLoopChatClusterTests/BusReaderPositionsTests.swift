import RunLoopRedis
import Testing

@testable import RunLoopChatCluster

/// How the reader proves it missed nothing, without a server.
@Suite("Bus reader positions")
struct BusReaderPositionsTests {
    func id(_ milliseconds: UInt64, _ sequence: UInt64 = 0) -> StreamID { StreamID(milliseconds: milliseconds, sequence: sequence) }

    func status(last: UInt64, first: UInt64?, added: UInt64 = 10, length: UInt64 = 10) -> StreamStatus {
        StreamStatus(lastGenerated: id(last), firstEntry: first.map { id($0) }, entriesAdded: added, length: length)
    }

    @Test("stream ids parse and order like Redis's")
    func streamIDs() {
        #expect(StreamID("1700-3") == id(1700, 3))
        #expect(StreamID("1700") == nil)
        #expect(StreamID("a-1") == nil)
        #expect(id(5, 1).predecessor == id(5, 0))
        #expect(id(5, 0).predecessor == id(4, .max))
        #expect(StreamID.zero.predecessor == .zero)
        #expect(id(5, 9) < id(6, 0))
        #expect(id(6, 1) > id(6, 0))
        #expect("\(id(12, 4))" == "12-4")
    }

    @Test("XINFO STREAM's reply gives the status; a stream holding nothing has no first entry")
    func xinfoReply() {
        func reply(first: RedisReply) -> RedisReply {
            .array([
                .bytes(Array("length".utf8)), .integer(2), .bytes(Array("last-generated-id".utf8)), .bytes(Array("9-1".utf8)),
                .bytes(Array("max-deleted-entry-id".utf8)), .bytes(Array("0-0".utf8)), .bytes(Array("entries-added".utf8)), .integer(5),
                .bytes(Array("first-entry".utf8)), first
            ])
        }
        let entry = RedisReply.array([.bytes(Array("8-0".utf8)), .array([.bytes(Array("k".utf8)), .bytes(Array("p".utf8))])])
        #expect(StreamStatus(reply: reply(first: entry)) == StreamStatus(lastGenerated: id(9, 1), firstEntry: id(8), entriesAdded: 5, length: 2))
        #expect(StreamStatus(reply: reply(first: .null))?.firstEntry == nil)
        #expect(StreamStatus(reply: .array([])) == nil)
    }

    @Test("a position is intact while the stream still holds its entry or never trimmed; trimmed past it, or reset, it is not")
    func checks() {
        #expect(StreamStatus.check(position: id(5), status: status(last: 9, first: 5, added: 20)) == .intact)
        #expect(StreamStatus.check(position: id(5), status: status(last: 9, first: 6, added: 20)) == .trimmed)
        #expect(StreamStatus.check(position: id(5, .max), status: status(last: 9, first: 6, added: 20)) == .intact)
        #expect(StreamStatus.check(position: .zero, status: status(last: 9, first: 6, added: 10, length: 10)) == .intact)
        #expect(StreamStatus.check(position: .zero, status: status(last: 9, first: 6, added: 11, length: 10)) == .trimmed)
        #expect(StreamStatus.check(position: id(9), status: status(last: 9, first: nil, added: 4, length: 0)) == .intact)
        #expect(StreamStatus.check(position: id(8), status: status(last: 9, first: nil, added: 4, length: 0)) == .trimmed)
        #expect(StreamStatus.check(position: id(5), status: nil) == .reset)
        #expect(StreamStatus.check(position: .zero, status: nil) == .intact)
        #expect(StreamStatus.check(position: id(12), status: status(last: 9, first: 1)) == .reset)
    }

    @Test("the first connection starts at each stream's end; a reconnect to the same server resumes where it was")
    func startAndResume() {
        var positions = BusReaderPositions(streamCount: 2)
        let first = positions.connected(runID: "r1", statuses: [status(last: 9, first: 1), nil])
        #expect(first.isEmpty)
        #expect(positions.positions == [id(9), .zero])
        positions.read(shard: 1, through: id(11))
        let checked = positions.checked(shard: 1, status: status(last: 11, first: 10, added: 2, length: 2))
        #expect(!checked)
        #expect(
            positions.readArguments(keys: ["a", "b"], block: .milliseconds(100), count: 5) == [
                "XREAD", "COUNT", "5", "BLOCK", "100", "STREAMS", "a", "b", "9-0", "11-0"
            ])
        let behind = positions.connected(runID: "r1", statuses: [status(last: 12, first: 1), status(last: 11, first: 10, added: 2, length: 2)])
        #expect(behind.isEmpty)
        #expect(positions.positions == [id(9), id(11)])
    }

    @Test("a reader whose first attempts failed starts from the ends all the same, and reports every stream behind")
    func lateStart() {
        var positions = BusReaderPositions(streamCount: 2)
        positions.attemptFailed()
        let first = positions.connected(runID: "r1", statuses: [status(last: 9, first: 1), nil])
        #expect(first == [0, 1])
        #expect(positions.positions == [id(9), .zero])
        positions.attemptFailed()
        let resumed = positions.connected(runID: "r1", statuses: [status(last: 9, first: 1), nil])
        #expect(resumed.isEmpty)
    }

    @Test("another Redis process, trimmed entries or a reset stream: the reader fell behind there, and reads a reset stream from its start")
    func fallingBehind() {
        var positions = BusReaderPositions(streamCount: 3)
        _ = positions.connected(runID: "r1", statuses: [status(last: 9, first: 1), status(last: 9, first: 1), status(last: 9, first: 1)])
        let behind = positions.connected(
            runID: "r1", statuses: [status(last: 20, first: 12, added: 30, length: 9), status(last: 9, first: 1), nil])
        #expect(behind == [0, 2])
        // Past the gap, reported once: the next read's check finds everything after its start held.
        #expect(positions.positions == [id(11, .max), id(9), .zero])
        positions.read(shard: 0, through: id(20))
        let again = positions.checked(shard: 0, status: status(last: 20, first: 12, added: 30, length: 9))
        #expect(!again)
        let elsewhere = positions.connected(runID: "r2", statuses: [status(last: 20, first: 5), status(last: 3, first: 1), nil])
        #expect(elsewhere == [0, 1, 2])
        #expect(positions.positions == [id(20), .zero, .zero])
    }

    @Test("after a reply, the read's starting point is checked: trimmed before the read reached Redis means fallen behind")
    func replyChecks() {
        var positions = BusReaderPositions(streamCount: 1)
        _ = positions.connected(runID: "r1", statuses: [status(last: 9, first: 1)])
        positions.read(shard: 0, through: id(30))
        let stillHeld = positions.checked(shard: 0, status: status(last: 30, first: 9, added: 40, length: 22))
        positions.read(shard: 0, through: id(40))
        let trimmedAway = positions.checked(shard: 0, status: status(last: 40, first: 35, added: 50, length: 16))
        #expect(!stillHeld)
        #expect(trimmedAway)
        #expect(positions.positions == [id(40)])
    }

    @Test("a connection lost before a read's check answered leaves the stream unproven: the next one reports it behind")
    func uncheckedReadAtReconnect() {
        var positions = BusReaderPositions(streamCount: 2)
        _ = positions.connected(runID: "r1", statuses: [status(last: 9, first: 1), status(last: 9, first: 1)])
        positions.read(shard: 1, through: id(12))
        let behind = positions.connected(runID: "r1", statuses: [status(last: 9, first: 1), status(last: 12, first: 1)])
        #expect(behind == [1])
        #expect(positions.unchecked.isEmpty)
        #expect(positions.positions == [id(9), id(12)])
    }

    @Test("XREAD's reply gives each stream's entries; a timed-out block gives none")
    func xreadReply() {
        let reply = RedisReply.array([
            .array([
                .bytes(Array("s:0".utf8)),
                .array([.array([.bytes(Array("5-1".utf8)), .array([.bytes(Array("k".utf8)), .bytes(Array("p".utf8))])])])
            ])
        ])
        #expect(StreamBatch.batches(in: reply) == [StreamBatch(key: "s:0", entries: [(id(5, 1), [Array("k".utf8), Array("p".utf8)])])])
        #expect(StreamBatch.batches(in: .null) == [])
        #expect(StreamBatch.batches(in: .integer(1)) == nil)
        #expect(redisRunID(in: .bytes(Array("# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\ntcp_port:0\r\n".utf8))) == "abc123")
    }
}
