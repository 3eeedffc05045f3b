import Glibc
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// Connect, read and write timeouts on a manual clock: real loopback sockets, virtual time, no sleeping.
/// The clock jumps only while no descriptor is ready, so every expiry lands exactly on its deadline.
@Suite struct TimeoutTests {
    @Test func connectTimesOutWhileTheResolverNeverAnswers() async throws {
        let (reason, elapsed) = try await onManualClockLoop { loop, clock in
            var reason: CloseReason?
            var closedAt: LoopInstant?
            let start = clock.now
            let client = TCPConnection()
            client.onClose = { _, why in
                reason = why
                closedAt = loop.now
            }
            client.connect(to: "never.test", port: 7, timeout: .seconds(5), resolver: NeverResolver())
            try spin(loop, for: .seconds(60)) { reason != nil }
            return (reason, closedAt.map { $0 - start })
        }
        #expect(reason == .failed(.timedOut(.connect)))
        #expect(elapsed == .seconds(5))
    }

    @Test func readTimeoutFiresAfterBeingExtendedFromTheCallback() async throws {
        struct Outcome: Sendable {
            var asked: [Duration] = []
            var serverReason: CloseReason?
            var clientReason: CloseReason?
            var closedAfter: Duration?
        }
        let outcome = try await onManualClockLoop { loop, clock in
            var outcome = Outcome()
            var acceptedAt: LoopInstant?
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                acceptedAt = loop.now
                connection.onData = { _, _ in }
                connection.readTimeout = .seconds(10)
                // A heartbeat would send a ping here and grant the pong five more seconds, twice.
                connection.shouldTimeoutRead = { _, elapsed in
                    outcome.asked.append(elapsed)
                    return outcome.asked.count <= 2 ? .seconds(5) : nil
                }
                connection.onClose = { _, why in
                    outcome.serverReason = why
                    outcome.closedAfter = acceptedAt.map { loop.now - $0 }
                }
            }
            try listener.listen()
            let client = TCPConnection()
            client.onClose = { _, why in outcome.clientReason = why }
            client.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            try spin(loop, for: .seconds(120)) { outcome.serverReason != nil && outcome.clientReason != nil }
            return outcome
        }
        #expect(outcome.asked == [.seconds(10), .seconds(15), .seconds(20)])
        #expect(outcome.serverReason == .failed(.timedOut(.read)))
        #expect(outcome.closedAfter == .seconds(20))
        #expect(outcome.clientReason == .peerClosed)
    }

    /// An accepted connection with a `timeout` idle read timeout (set in `onAccept`, or `setAt` after
    /// the start) and a client that writes a byte every `every`, `bytes` times: why the server's side
    /// closed, how long after its accept, and the bytes it read.
    private func idleTimeout(
        _ timeout: Duration, setAt: Duration? = nil, bytes: Int, every: Duration
    ) async throws -> (reason: CloseReason?, closedAfter: Duration?, received: Int) {
        try await onManualClockLoop { loop, _ in
            var reason: CloseReason?
            var closedAfter: Duration?
            var received = 0
            var acceptedAt: LoopInstant?
            var server: TCPConnection?
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                acceptedAt = loop.now
                server = connection
                if setAt == nil { connection.readTimeout = timeout }
                connection.onData = { _, chunk in received += chunk.count }
                connection.onClose = { _, why in
                    reason = why
                    closedAfter = acceptedAt.map { loop.now - $0 }
                }
            }
            try listener.listen()
            let client = TCPConnection()
            client.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            var sent = 0
            let ticker = RunLoopTimer(after: every, repeating: every) { timer in
                try? client.write([1])
                sent += 1
                if sent == bytes { timer.invalidate() }
            }
            loop.add(ticker, forMode: .common)
            if let setAt {
                loop.add(RunLoopTimer(after: setAt) { _ in server?.readTimeout = timeout }, forMode: .common)
            }
            try spin(loop, for: .seconds(120)) { reason != nil }
            client.close()
            return (reason, closedAfter, received)
        }
    }

    @Test func arrivingBytesPushTheIdleReadTimeoutBack() async throws {
        // One byte every 4 s, three times: each arrival restarts the 5 s wait.
        let (reason, closedAfter, received) = try await idleTimeout(.seconds(5), bytes: 3, every: .seconds(4))
        #expect(received == 3)
        #expect(reason == .failed(.timedOut(.read)))
        #expect(closedAfter == .seconds(17), "last byte at 12 s, then 5 s of silence")
    }

    /// Without an idle timeout, arrivals stamp no time (no clock read per read); one set later counts
    /// from when it was set — not from the accept, and not from the last byte read before it.
    @Test func anIdleTimeoutSetAfterArrivalsCountsFromWhenItWasSet() async throws {
        // Bytes at 2, 4 and 6 s with no timeout; at 20 s a 5 s idle timeout; then silence.
        let (reason, closedAfter, received) = try await idleTimeout(.seconds(5), setAt: .seconds(20), bytes: 3, every: .seconds(2))
        #expect(received == 3)
        #expect(reason == .failed(.timedOut(.read)))
        #expect(closedAfter == .seconds(25), "set at 20 s, then 5 s of silence")
    }

    /// A deadline armed for an earlier wait is not moved on each arrival: the timer fires at the old
    /// instant and re-dates itself from the last arrival. Bytes every second for 30 s under a 5 s idle
    /// timeout keep the connection open; the silence after them closes it 5 s after the last.
    @Test func steadyArrivalsKeepALazilyReDatedIdleTimeoutFromFiring() async throws {
        let (reason, closedAfter, received) = try await idleTimeout(.seconds(5), bytes: 30, every: .seconds(1))
        #expect(received == 30)
        #expect(reason == .failed(.timedOut(.read)))
        #expect(closedAfter == .seconds(35), "last byte at 30 s, then 5 s of silence")
    }

    @Test func aReadTimeoutMissedByABusyLoopWaitsForTheBytesThatArrived() async throws {
        let (received, reason, silence, asked) = try await onManualClockLoop { loop, clock in
            var received = 0
            var asked = 0
            var reason: CloseReason?
            var lastByteAt: LoopInstant?
            var silence: Duration?
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                connection.readTimeout = .seconds(5)
                // A hook that refuses at once (as a server's 408 does) must not be asked while the
                // bytes wait: the grace comes first.
                connection.shouldTimeoutRead = { _, _ in
                    asked += 1
                    return nil
                }
                connection.onData = { _, chunk in
                    received += chunk.count
                    lastByteAt = loop.now
                }
                connection.onClose = { _, why in
                    reason = why
                    silence = lastByteAt.map { loop.now - $0 }
                }
            }
            try listener.listen()
            let client = TCPConnection()
            client.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            // At 4 s the client's byte arrives, and the loop then stays busy in this callout for 3 s:
            // the server's 5 s read deadline passes with the byte waiting unread. A stalled loop
            // fires timers before it reads, so without the check the peer would be judged silent.
            loop.add(
                RunLoopTimer(after: .seconds(4)) { _ in
                    try? client.write([1])
                    clock.advance(by: .seconds(3))
                }, forMode: .common)
            try spin(loop, for: .seconds(120)) { reason != nil }
            client.close()
            return (received, reason, silence, asked)
        }
        #expect(received == 1)
        #expect(asked == 1, "asked only when the peer was really silent")
        // Then real silence still times out, 5 s after the byte was read.
        #expect(reason == .failed(.timedOut(.read)))
        #expect(silence == .seconds(5))
    }

    @Test func readRequestTimeoutCoversTheWholeRequest() async throws {
        let (reason, elapsed, completed) = try await onManualClockLoop { loop, clock in
            var reason: CloseReason?
            var elapsed: Duration?
            var completed = false
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                let start = loop.now
                connection.read(exactly: 10, timeout: .seconds(3)) { _, _ in completed = true }
                connection.onClose = { _, why in
                    reason = why
                    elapsed = loop.now - start
                }
            }
            try listener.listen()
            let client = TCPConnection()
            client.onConnect = { try? $0.write(bytes("half!")) }
            client.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            try spin(loop, for: .seconds(60)) { reason != nil }
            client.close()
            return (reason, elapsed, completed)
        }
        #expect(!completed)
        #expect(reason == .failed(.timedOut(.read)))
        #expect(elapsed == .seconds(3), "partial input does not restart a request's timeout")
    }

    @Test func writeTimeoutFiresWhenThePeerStopsReading() async throws {
        let (reason, stalledFor, queued) = try await onManualClockLoop { loop, clock in
            var reason: CloseReason?
            var stalledFor: Duration?
            var queued = 0
            let small = TCPOptions(sendBufferSize: 4096, receiveBufferSize: 4096)
            let listener = TCPListener(connectionOptions: small)
            defer { listener.close() }
            listener.onAccept = { _, connection in
                connection.writeTimeout = .seconds(2)
                connection.shouldTimeoutWrite = { _, waited in
                    stalledFor = waited
                    return nil
                }
                // Far more than the kernel buffers hold: the rest waits in the queue.
                try? connection.write([UInt8](repeating: 7, count: 1 << 20))
                queued = connection.bufferedOutputBytes
                connection.onClose = { _, why in reason = why }
            }
            try listener.listen()
            let client = TCPConnection(options: small)
            client.onConnect = { $0.pauseReading() }
            client.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            try spin(loop, for: .seconds(60)) { reason != nil }
            client.close(immediately: true)
            return (reason, stalledFor, queued)
        }
        #expect(queued > 0)
        #expect(reason == .failed(.timedOut(.write)))
        #expect(stalledFor == .seconds(2))
    }

    /// The echo pattern (echo, pause reading while the output is over the high water mark, resume
    /// when it drains) against a client that sends and never reads: reading is paused, so the idle
    /// timeout does not run, and only the default write timeout shows that nothing moves any more.
    @Test func aPeerThatSendsButNeverReadsIsReclaimedByTheDefaultWriteTimeout() async throws {
        let (reason, stalled, writeTimeout) = try await onManualClockLoop { loop, clock in
            var reason: CloseReason?
            var lastEcho: LoopInstant?
            var closedAt: LoopInstant?
            var writeTimeout: Duration?
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                connection.readTimeout = .seconds(3)  // echo-server's --idle-seconds 3
                writeTimeout = connection.writeTimeout
                connection.onData = { connection, bytes in
                    try? connection.write(bytes)
                    lastEcho = loop.now
                    if !connection.isWritable { connection.pauseReading() }
                }
                connection.onWritabilityChanged = { connection, writable in
                    if writable { connection.resumeReading() }
                }
                connection.onClose = { _, why in
                    reason = why
                    closedAt = loop.now
                }
            }
            try listener.listen()
            let client = TCPConnection()
            client.writeTimeout = nil  // the hostile side does not give up
            client.pauseReading()
            client.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            let sender = RunLoopTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { _ in
                if client.bufferedOutputBytes < 1 << 20 { try? client.write([UInt8](repeating: 3, count: 64 * 1024)) }
            }
            loop.add(sender, forMode: .common)
            try spin(loop, for: .seconds(600)) { reason != nil }
            sender.invalidate()
            client.close(immediately: true)
            let stalled: Duration? = if let closedAt, let lastEcho { closedAt - lastEcho } else { nil }
            return (reason, stalled, writeTimeout)
        }
        #expect(writeTimeout == .seconds(60), "the default")
        #expect(reason == .failed(.timedOut(.write)))
        #expect(stalled.map { $0 <= .seconds(61) } == true, "closed within the write timeout of the last echo")
    }

    /// A client that sends, half-closes and never reads its echoes: the server sees the end of input,
    /// starts a graceful close, and its flush can never finish. The write timeout ends it.
    @Test func aClientThatHalfClosesAndNeverReadsIsReclaimed() async throws {
        let reason = try await onManualClockLoop { loop, _ in
            var reason: CloseReason?
            let small = TCPOptions(sendBufferSize: 8192, receiveBufferSize: 8192)
            let listener = TCPListener(connectionOptions: small)
            defer { listener.close() }
            listener.onAccept = { _, connection in
                connection.onData = { connection, bytes in try? connection.write(bytes) }
                connection.onClose = { _, why in reason = why }
            }
            try listener.listen()
            let client = TCPConnection(options: small)
            client.writeTimeout = nil
            client.pauseReading()
            client.onConnect = { connection in
                try? connection.write([UInt8](repeating: 4, count: 128 * 1024))
                connection.shutdownOutput()
            }
            client.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            try spin(loop, for: .seconds(600)) { reason != nil }
            client.close(immediately: true)
            return reason
        }
        #expect(reason == .failed(.timedOut(.write)))
    }
}
