import Glibc
import RunLoopKit
@testable import RunLoopNet
import RunLoopTesting
import Testing

/// The listener: connection limit, descriptor exhaustion, many connections on one loop.
@Suite struct ListenerTests {
    @Test func connectionsPastTheLimitAreRefusedClearly() async throws {
        struct Outcome: Sendable {
            var refusals: [NetError] = []
            var refusedClientHeard = ""
            var refusedClientReason: CloseReason?
            var echoes = 0
            var acceptedAfterAClose = false
        }
        let outcome = try await onLoopThread {
            let loop = RunLoop.current
            var outcome = Outcome()
            let listener = try echoListener()
            defer { listener.close() }
            listener.maxConnections = 2
            listener.refusalMessage = bytes("busy\n")
            listener.onRefused = { _, _, error in outcome.refusals.append(error) }

            func client(_ onOpen: @escaping (TCPConnection) -> Void) -> TCPConnection {
                let connection = TCPConnection()
                connection.onConnect = onOpen
                connection.connect(to: "127.0.0.1", port: listener.port)
                return connection
            }
            // Two fill the listener (and prove it by echoing) before the third arrives.
            var first: TCPConnection?
            for index in 0..<2 {
                let connection = client { try? $0.write(bytes("hi")) }
                connection.onData = { _, _ in outcome.echoes += 1 }
                if index == 0 { first = connection }
            }
            try spin(loop) { outcome.echoes == 2 && listener.connectionCount == 2 }
            let third = client { _ in }
            third.onData = { _, chunk in outcome.refusedClientHeard += text(chunk) }
            third.onClose = { _, why in outcome.refusedClientReason = why }
            try spin(loop) { outcome.refusedClientReason != nil }
            // A slot frees up when a connection closes.
            first?.close()
            try spin(loop) { listener.connectionCount == 1 }
            let fourth = client { try? $0.write(bytes("again")) }
            fourth.onData = { _, _ in outcome.acceptedAfterAClose = true }
            try spin(loop) { outcome.acceptedAfterAClose }
            return outcome
        }
        #expect(outcome.refusals == [.listenerFull(limit: 2)])
        #expect(outcome.refusedClientHeard == "busy\n")
        #expect(outcome.refusedClientReason == .peerClosed)
        #expect(outcome.echoes == 2)
        #expect(outcome.acceptedAfterAClose)
    }

    @Test func descriptorExhaustionPausesAcceptingInsteadOfSpinning() async throws {
        let (calls, failures, acceptedAfter) = try await onManualClockLoop { loop, clock in
            var calls = 0
            var acceptedAt: LoopInstant?
            let listener = try echoListener()
            defer { listener.close() }
            listener.acceptRetryDelay = .milliseconds(250)
            listener.acceptCall = { fd in
                calls += 1
                // The first attempt finds the process out of descriptors.
                return calls == 1 ? (-EMFILE, nil) : Socket.accept(fd)
            }
            let echo = listener.onAccept
            listener.onAccept = { listener, connection in
                acceptedAt = loop.now
                echo?(listener, connection)
            }
            let start = clock.now
            let client = TCPConnection()
            client.connect(to: "127.0.0.1", port: listener.port, timeout: nil)
            try spin(loop, for: .seconds(10)) { acceptedAt != nil }
            client.close()
            return (calls, listener.acceptFailures, acceptedAt.map { $0 - start })
        }
        // One failing call, then (after the pause) one accept and one EAGAIN: no busy loop.
        #expect(calls == 3)
        #expect(failures == 1)
        #expect(acceptedAfter == .milliseconds(250))
    }

    @Test func aThousandConcurrentConnectionsEchoOnOneLoop() async throws {
        let count = 1000
        let (echoed, peak, closedCleanly, limit) = try await onLoopThread {
            let loop = RunLoop.current
            let limit = raiseDescriptorLimit()
            let listener = try echoListener()
            defer { listener.close() }
            var echoed = 0
            var peak = 0
            var closed = 0
            var cleanly = 0
            var clients: [TCPConnection] = []
            // Start them in batches so the accept queue (backlog) never overflows, and keep every one
            // open until all have echoed: they are all connected at once.
            var started = 0
            func startBatch() {
                for _ in 0..<min(100, count - started) {
                    let index = started
                    started += 1
                    let client = TCPConnection()
                    client.onConnect = { connection in
                        var message = [UInt8](repeating: UInt8(index % 256), count: 64)
                        message[0] = UInt8(index >> 8)
                        try? connection.write(message)
                        connection.read(exactly: 64) { _, reply in
                            if reply == message { echoed += 1 }
                            peak = max(peak, listener.connectionCount)
                        }
                    }
                    client.onClose = { _, why in
                        closed += 1
                        if why == .closed { cleanly += 1 }
                    }
                    client.connect(to: "127.0.0.1", port: listener.port)
                    clients.append(client)
                }
            }
            // Generous limits: 0.5 s in all on a normal run, but the thread sanitizer on a busy 2-core
            // machine has taken 5 s for one batch. They only end a real hang.
            while started < count {
                startBatch()
                try spin(loop, for: .seconds(60)) { echoed == started }
            }
            for client in clients { client.close() }
            try spin(loop, for: .seconds(60)) { closed == count && listener.connectionCount == 0 }
            return (echoed, peak, cleanly, limit)
        }
        #expect(limit >= 2 * UInt64(count) + 100, "descriptor limit too low for this test")
        #expect(echoed == count)
        #expect(peak == count, "every connection was open at once")
        #expect(closedCleanly == count)
    }
}
