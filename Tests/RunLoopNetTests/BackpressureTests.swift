import Glibc
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// Output queue, water marks and the hard limit, driven by a slow reader.
@Suite struct BackpressureTests {
    static let small = TCPOptions(sendBufferSize: 8192, receiveBufferSize: 8192)
    static let marks = TCPBufferLimits(writeHighWaterMark: 64 * 1024, writeLowWaterMark: 16 * 1024, writeLimit: 256 * 1024)

    @Test func slowReaderDrivesWritabilityDownAndBackUp() async throws {
        struct Outcome: Sendable {
            var transitions: [Bool] = []
            var maximumQueued = 0
            var received = 0
            var inOrder = true
            var clientReason: CloseReason?
            var serverReason: CloseReason?
        }
        let total = 2 * 1024 * 1024
        let chunk = 16 * 1024
        let stream = patternStream(count: total)
        let outcome = try await onLoopThread {
            let loop = RunLoop.current
            var outcome = Outcome()
            var client: TCPConnection?
            let listener = TCPListener(connectionOptions: Self.small, connectionLimits: Self.marks)
            defer { listener.close() }
            listener.onAccept = { _, connection in
                var produced = 0
                // Produce while writable; stop at the high water mark; resume when told.
                func produce(_ connection: TCPConnection) {
                    while connection.isWritable && produced < total {
                        try? connection.write(Array(stream[produced..<(produced + chunk)]))
                        produced += chunk
                        outcome.maximumQueued = max(outcome.maximumQueued, connection.bufferedOutputBytes)
                    }
                    if produced >= total { connection.close() }
                }
                connection.onWritabilityChanged = { connection, writable in
                    outcome.transitions.append(writable)
                    // The first stall is the cue for the slow reader to start reading.
                    if !writable { client?.resumeReading() }
                    if writable { produce(connection) }
                }
                connection.onClose = { _, why in outcome.serverReason = why }
                produce(connection)
            }
            try listener.listen()
            let reader = TCPConnection(options: Self.small)
            client = reader
            // Paused from the start: the server's first stall (whenever it comes) is what resumes it.
            reader.pauseReading()
            reader.onData = { _, bytes in
                if !isPart(bytes, of: stream, at: outcome.received) { outcome.inOrder = false }
                outcome.received += bytes.count
            }
            reader.onClose = { _, why in outcome.clientReason = why }
            reader.connect(to: "127.0.0.1", port: listener.port)
            // spin's default hang guard (30 s). The trickle itself takes a second or two under the
            // thread sanitizer on a loaded 2-core machine; making and checking the bytes one by one
            // in the callouts (see patternStream) used to take more than the whole 30 s.
            try spin(loop) { outcome.clientReason != nil && outcome.serverReason != nil }
            client = nil
            return outcome
        }
        #expect(outcome.received == total)
        #expect(outcome.inOrder)
        #expect(outcome.transitions.first == false)
        #expect(outcome.transitions.contains(true))
        #expect(outcome.maximumQueued <= Self.marks.writeHighWaterMark + chunk, "the producer stops at the high water mark")
        #expect(outcome.serverReason == .closed)
        #expect(outcome.clientReason == .peerClosed)
    }

    @Test func writesPastTheHardLimitAreRefusedWithoutQueueing() async throws {
        let (refusal, queuedBefore, queuedAfter, writable) = try await onLoopThread {
            let loop = RunLoop.current
            var refusal: NetError?
            var queuedBefore = 0
            var queuedAfter = 0
            var writable = true
            var done = false
            let listener = TCPListener(connectionOptions: Self.small, connectionLimits: Self.marks)
            defer { listener.close() }
            listener.onAccept = { _, connection in
                try? connection.write([UInt8](repeating: 1, count: 200 * 1024))
                queuedBefore = connection.bufferedOutputBytes
                do throws(NetError) {
                    try connection.write([UInt8](repeating: 2, count: 100 * 1024))
                } catch {
                    refusal = error
                }
                queuedAfter = connection.bufferedOutputBytes
                writable = connection.isWritable
                connection.close(immediately: true)
                done = true
            }
            try listener.listen()
            let reader = TCPConnection(options: Self.small)
            reader.onConnect = { $0.pauseReading() }
            reader.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { done }
            reader.close(immediately: true)
            return (refusal, queuedBefore, queuedAfter, writable)
        }
        #expect(refusal == .writeBufferFull(limit: 256 * 1024))
        #expect(queuedBefore > 0)
        #expect(queuedAfter == queuedBefore)
        #expect(!writable)
    }

    @Test func unconsumedInputIsBoundedUntilAConsumerArrives() async throws {
        let (buffered, afterConsumer) = try await onLoopThread {
            let loop = RunLoop.current
            var received = 0
            var serverDone = false
            let limits = TCPBufferLimits(inputLimit: 32 * 1024, readChunkSize: 8 * 1024)
            let listener = TCPListener(connectionOptions: Self.small)
            defer { listener.close() }
            listener.onAccept = { _, connection in
                try? connection.write([UInt8](repeating: 9, count: 512 * 1024))
                connection.close()
                connection.onClose = { _, _ in serverDone = true }
            }
            try listener.listen()
            // No consumer yet: input piles up to the limit, then the socket is left alone. Wait for
            // the limit (not a fixed time: a slow machine or the thread sanitizer may take longer),
            // then give the loop more turns to show that reading stays paused.
            let reader = TCPConnection(options: Self.small, limits: limits)
            reader.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop, for: .seconds(10)) { reader.bufferedInputBytes >= 32 * 1024 }
            try spin(loop, for: .milliseconds(50)) { false }
            let buffered = reader.bufferedInputBytes
            reader.onData = { _, bytes in received += bytes.count }
            try spin(loop) { serverDone && reader.state == .closed }
            return (buffered, received)
        }
        #expect(buffered >= 32 * 1024)
        #expect(buffered <= 32 * 1024 + 8 * 1024, "reading pauses at the input limit")
        #expect(afterConsumer == 512 * 1024)
    }
}
