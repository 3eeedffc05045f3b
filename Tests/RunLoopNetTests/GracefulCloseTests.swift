import Glibc
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

/// The lingering close: flush, shut the output down, read and discard until the peer's end of input,
/// then close — so that no input arriving late makes the kernel reset the connection and throw away
/// what the peer has not read yet. When that cannot be confirmed, the close reason says so.
@Suite struct GracefulCloseTests {
    struct Outcome: Sendable {
        var received = 0
        var inOrder = true
        var clientReason: CloseReason?
        var serverReason: CloseReason?
    }

    /// What outside testing found: a reader still sending while it slowly reads megabytes that the
    /// server queued before closing. A close that discards at most a little unread input and then
    /// closes lets the client's next bytes make the kernel answer with a reset, and the client loses
    /// the tail. With the lingering close it receives every byte, then a clean end of stream.
    @Test func aSlowReaderThatKeepsSendingReceivesEverythingThenEndOfStream() async throws {
        let total = 4 * 1024 * 1024
        let stream = patternStream(count: total)
        let outcome = try await onLoopThread {
            let loop = RunLoop.current
            var outcome = Outcome()
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                connection.onData = { _, _ in }  // the client's chatter is read and ignored
                connection.onClose = { _, why in outcome.serverReason = why }
                var written = 0
                while written < total {
                    try? connection.write(Array(stream[written..<(written + 64 * 1024)]))
                    written += 64 * 1024
                }
                connection.close()
            }
            try listener.listen()

            let client = TCPConnection()
            client.pauseReading()  // reads nothing at first: the server's queue and the kernel fill up
            client.onData = { _, bytes in
                if !isPart(bytes, of: stream, at: outcome.received) { outcome.inOrder = false }
                outcome.received += bytes.count
            }
            client.onClose = { _, why in outcome.clientReason = why }
            client.connect(to: "127.0.0.1", port: listener.port)
            // The client keeps talking all along, 1 KiB a millisecond, while it is open — from the
            // first tick after it connected, which on a loaded machine can be many ticks away.
            let chatter = RunLoopTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { timer in
                switch client.state {
                case .idle, .resolving, .connecting: return
                case .connected: try? client.write([UInt8](repeating: 0x55, count: 1024))
                case .closing, .closed: timer.invalidate()
                }
            }
            loop.add(chatter, forMode: .common)
            loop.add(RunLoopTimer(after: .milliseconds(30)) { _ in client.resumeReading() }, forMode: .common)
            try spin(loop) { outcome.clientReason != nil && outcome.serverReason != nil }
            chatter.invalidate()
            return outcome
        }
        #expect(outcome.received == total)
        #expect(outcome.inOrder)
        #expect(outcome.clientReason == .peerClosed, "a clean end of stream, not a reset")
        #expect(outcome.serverReason == .closed)
    }

    /// A peer that reads everything but never ends its own input: the close cannot be confirmed, so
    /// after the linger timeout it is reported as such, never as `closed`.
    @Test func aPeerThatNeverEndsItsInputEndsTheLingerWithATimeout() async throws {
        let (serverReason, lingered, clientHeard, clientSawEnd) = try await onManualClockLoop { loop, _ in
            var serverReason: CloseReason?
            var closedAt: LoopInstant?
            var lingered: Duration?
            var clientHeard = ""
            var clientSawEnd = false
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                try? connection.write(bytes("bye\n"))
                closedAt = loop.now
                connection.close()
                connection.onClose = { _, why in
                    serverReason = why
                    lingered = closedAt.map { loop.now - $0 }
                }
            }
            try listener.listen()
            let client = TCPConnection()
            client.allowsHalfClosure = true  // stays open after the server's end of stream
            client.onData = { _, chunk in clientHeard += text(chunk) }
            client.onInputClosed = { _ in clientSawEnd = true }
            client.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            try spin(loop, for: .seconds(60)) { serverReason != nil }
            client.close(immediately: true)
            return (serverReason, lingered, clientHeard, clientSawEnd)
        }
        #expect(clientHeard == "bye\n")
        #expect(clientSawEnd, "the output was shut down after the last byte")
        #expect(serverReason == .failed(.timedOut(.linger)))
        #expect(lingered == .seconds(10), "the default linger timeout, nothing acknowledged meanwhile")
    }

    /// The linger timeout counts time without progress: a reader that keeps acknowledging what the
    /// kernel still holds for it gets all the time it needs, however long past the timeout. On a
    /// manual clock, so that a busy machine delaying the reader cannot look like a stalled peer.
    @Test func aSlowReaderDrainingTheKernelQueueOutlastsTheLingerTimeout() async throws {
        let total = 1024 * 1024
        let stream = patternStream(count: total)
        // The clock moves only when the test moves it, and only after the reader made progress: virtual
        // time never passes while the kernel's loopback is still moving bytes in real time. (With an
        // auto-advancing clock, idle passes under load moved it on while ACKs lagged, and the linger
        // timeout fired although the reader was still reading.)
        let (outcome, took) = try await onManualClockLoop(autoAdvances: false) { loop, clock in
            var outcome = Outcome()
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                connection.lingerTimeout = .milliseconds(30)
                connection.onClose = { _, why in outcome.serverReason = why }
                try? connection.write(stream)
                connection.close()
            }
            try listener.listen()
            // A small receive window, one 4 KiB read per 5 ms step: the megabyte takes far longer
            // (virtual) than the 30 ms linger timeout to drain.
            let client = TCPConnection(
                options: TCPOptions(receiveBufferSize: 16 * 1024), limits: TCPBufferLimits(readChunkSize: 4096))
            client.onData = { connection, bytes in
                if !isPart(bytes, of: stream, at: outcome.received) { outcome.inOrder = false }
                outcome.received += bytes.count
                connection.pauseReading()
            }
            client.onClose = { _, why in outcome.clientReason = why }
            client.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            let start = loop.now
            let realDeadline = ContinuousClock.now + .seconds(60)
            func finished() -> Bool { outcome.clientReason != nil && outcome.serverReason != nil }
            while !finished() {
                let before = outcome.received
                let closedBefore = (outcome.clientReason != nil, outcome.serverReason != nil)
                client.resumeReading()
                while outcome.received == before, !finished(),
                    closedBefore == (outcome.clientReason != nil, outcome.serverReason != nil)
                {
                    guard ContinuousClock.now < realDeadline else { return (outcome, loop.now - start) }
                    _ = try loop.run(.default, timeout: .zero)
                    if outcome.received == before { usleep(100) }
                }
                clock.advance(by: .milliseconds(5))
            }
            return (outcome, loop.now - start)
        }
        #expect(outcome.received == total)
        #expect(outcome.inOrder)
        #expect(outcome.serverReason == .closed)
        #expect(outcome.clientReason == .peerClosed)
        #expect(took > .milliseconds(300), "the drain really outlasted the linger timeout (\(took))")
    }

    /// A peer that resets the connection while the close lingers: delivery is not confirmed.
    @Test func aResetWhileLingeringIsReportedAsAReset() async throws {
        let serverReason = try await onLoopThread {
            let loop = RunLoop.current
            var serverReason: CloseReason?
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                connection.onClose = { _, why in serverReason = why }
                try? connection.write(bytes("bye\n"))
                connection.close()
            }
            try listener.listen()
            let client = TCPConnection()
            client.allowsHalfClosure = true
            client.onData = { connection, _ in connection.close(immediately: true) }
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { serverReason != nil }
            return serverReason
        }
        #expect(serverReason == .failed(.connectionReset))
    }

    /// Input that arrives while a close lingers is neither delivered nor left unread, and the read
    /// requests pending at the close are dropped without a call.
    @Test func inputArrivingWhileClosingIsDiscardedNotDelivered() async throws {
        let (delivered, completions, serverReason, clientReason) = try await onLoopThread {
            let loop = RunLoop.current
            var delivered = 0
            var completions = 0
            var serverReason: CloseReason?
            var clientReason: CloseReason?
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                connection.onData = { _, chunk in delivered += chunk.count }
                connection.read(exactly: 1 << 20) { _, _ in completions += 1 }
                connection.onClose = { _, why in serverReason = why }
                connection.close()
            }
            try listener.listen()
            let client = TCPConnection()
            client.allowsHalfClosure = true
            // 2 MiB after the server's close began: it must read (and drop) all of it to see the end.
            client.onInputClosed = { connection in
                try? connection.write([UInt8](repeating: 1, count: 2 << 20))
                connection.shutdownOutput()
            }
            client.onClose = { _, why in clientReason = why }
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { serverReason != nil && clientReason != nil }
            return (delivered, completions, serverReason, clientReason)
        }
        #expect(delivered == 0)
        #expect(completions == 0)
        #expect(serverReason == .closed)
        #expect(clientReason == .closed)
    }
}
