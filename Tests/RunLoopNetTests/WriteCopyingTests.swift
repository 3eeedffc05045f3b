import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// `write(copying:)`: bytes written from the caller's memory (a heartbeat's answer from the stack,
/// issue 22) keep the order and the queueing rules of `write(_:)`.
@Suite struct WriteCopyingTests {
    static let small = TCPOptions(sendBufferSize: 8192, receiveBufferSize: 8192)
    static let marks = TCPBufferLimits(writeHighWaterMark: 64 * 1024, writeLowWaterMark: 16 * 1024, writeLimit: 256 * 1024)

    @Test("what the kernel does not take is queued, later writes of either kind go behind it, and the peer reads all in order")
    func remainderQueuedInOrder() async throws {
        struct Outcome: Sendable {
            var received: [UInt8] = []
            var expected: [UInt8] = []
            var queuedAfterFirst = 0
            var queuedAfterSecond = 0
            var refusalAfterClose: NetError?
        }
        let outcome = try await onLoopThread {
            let loop = RunLoop.current
            var outcome = Outcome()
            var server: TCPConnection?
            let listener = TCPListener(connectionOptions: Self.small, connectionLimits: Self.marks)
            defer { listener.close() }
            listener.onAccept = { _, connection in server = connection }
            try listener.listen()
            let reader = TCPConnection(options: Self.small)
            reader.onConnect = { $0.pauseReading() }
            reader.onData = { _, bytes in outcome.received += bytes }
            reader.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { server != nil && reader.state == .connected }
            let connection = try #require(server)
            // More than the two small socket buffers hold: the kernel takes a part, the rest is queued.
            let first = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            try writeCopying(first, to: connection)
            outcome.queuedAfterFirst = connection.bufferedOutputBytes
            let second: [UInt8] = [0xA1, 0xA2, 0xA3]
            try writeCopying(second, to: connection)
            outcome.queuedAfterSecond = connection.bufferedOutputBytes
            let third: [UInt8] = [0xB1, 0xB2]
            try connection.write(third)
            outcome.expected = first + second + third
            reader.resumeReading()
            try spin(loop) { outcome.received.count >= outcome.expected.count }
            connection.close(immediately: true)
            do throws(NetError) {
                try writeCopying([1], to: connection)
            } catch {
                outcome.refusalAfterClose = error
            }
            reader.close(immediately: true)
            return outcome
        }
        #expect(outcome.queuedAfterFirst > 0 && outcome.queuedAfterFirst < 100_000)
        #expect(outcome.queuedAfterSecond == outcome.queuedAfterFirst + 3)
        #expect(outcome.received == outcome.expected)
        #expect(outcome.refusalAfterClose == .outputClosed)
    }

    @Test("on an idle connection the bytes go to the kernel at once: nothing is queued")
    func idleConnectionSendsAtOnce() async throws {
        let (queued, received) = try await onLoopThread {
            let loop = RunLoop.current
            var server: TCPConnection?
            var received: [UInt8] = []
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in server = connection }
            try listener.listen()
            let reader = TCPConnection()
            reader.onData = { _, bytes in received += bytes }
            reader.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { server != nil && reader.state == .connected }
            let connection = try #require(server)
            try writeCopying([UInt8](repeating: 5, count: 16), to: connection)
            let queued = connection.bufferedOutputBytes
            try spin(loop) { received.count >= 16 }
            connection.close(immediately: true)
            reader.close(immediately: true)
            return (queued, received)
        }
        #expect(queued == 0)
        #expect(received == [UInt8](repeating: 5, count: 16))
    }
}

/// `connection.write(copying:)` from an array's memory. The failure is carried out of the closure:
/// a typed-throwing closure passed to `withUnsafeBytes` crashed the compiler (Swift 6.3.1, IRGen).
private func writeCopying(_ bytes: [UInt8], to connection: TCPConnection) throws(NetError) {
    var failure: NetError?
    bytes.withUnsafeBytes { raw in
        do throws(NetError) {
            try connection.write(copying: raw)
        } catch {
            failure = error
        }
    }
    if let failure { throw failure }
}
