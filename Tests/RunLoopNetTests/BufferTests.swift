import Testing

@testable import RunLoopNet

/// The byte buffers behind reads and writes.
@Suite struct BufferTests {
    @Test func delimiterSearchResumesWhereItStoppedAndFindsAStraddlingDelimiter() {
        var input = InputBuffer()
        var request = ReadRequest(kind: .delimiter(Array("\r\n".utf8), maximumLength: 64), timeout: nil) { _, _ in }
        func append(_ text: String) { Array(text.utf8).withUnsafeBytes { input.append($0) } }
        append("abc\r")
        #expect(input.end(of: Array("\r\n".utf8), from: request.scanned) == nil)
        // What a pending request remembers: the delimiter may start at the last byte.
        request.scanned = max(0, input.count - 2 + 1)
        append("\ndef")
        #expect(input.end(of: Array("\r\n".utf8), from: request.scanned) == 5)
        #expect(input.take(5) == Array("abc\r\n".utf8))
        #expect(input.takeAll() == Array("def".utf8))
        #expect(input.isEmpty)
    }

    @Test func emptiedInputHoldsNoStorageAndTheNextReadReusesTheThreadSpare() {
        // The spare lives beside the thread's read scratch, which the first read makes.
        ReadScratch.withBuffer(byteCount: 512) { _ in }
        var input = InputBuffer()
        Array(repeating: UInt8(1), count: 100).withUnsafeBytes { input.append($0) }
        var delivered = input.takeAll()
        let storage = delivered.withUnsafeBufferPointer { $0.baseAddress }
        input.recycle(&delivered)
        #expect(input.capacity == 0 && delivered.capacity == 0)
        // Another connection's input on this thread appends into the same storage: no allocation.
        var other = InputBuffer()
        Array(repeating: UInt8(2), count: 10).withUnsafeBytes { other.append($0) }
        #expect(other.takeAll().withUnsafeBufferPointer { $0.baseAddress } == storage)
        // A request's partial takes give the storage back once all is taken.
        Array(repeating: UInt8(3), count: 10).withUnsafeBytes { input.append($0) }
        _ = input.take(4)
        #expect(input.capacity > 0)
        _ = input.take(6)
        #expect(input.capacity == 0)
    }

    @Test func consumedPrefixIsCompactedOnAppend() {
        var input = InputBuffer()
        Array(repeating: UInt8(1), count: 100).withUnsafeBytes { input.append($0) }
        _ = input.take(80)
        Array(repeating: UInt8(2), count: 10).withUnsafeBytes { input.append($0) }
        #expect(input.count == 30)
        #expect(input.take(30) == Array(repeating: 1, count: 20) + Array(repeating: 2, count: 10))
    }

    @Test func outputQueueCoalescesSmallWritesAndCounts() {
        var output = OutputQueue()
        for _ in 0..<100 { output.append(Array(repeating: 7, count: 64)) }
        output.append(Array(repeating: 8, count: 100_000))
        #expect(output.count == 100 * 64 + 100_000)
        output.removeAll()
        #expect(output.isEmpty)
    }
}
