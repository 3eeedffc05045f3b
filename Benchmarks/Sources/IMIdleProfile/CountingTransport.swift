import RunLoopIM
import RunLoopNet

/// Heartbeats sent and answered by all clients of a ``ClientRole`` (its loop's thread only).
final class HeartbeatCounters {
    var sent = 0
    var answered = 0
}

/// A TCP transport that counts the HEARTBEAT frames its client writes and the HEARTBEAT_ACK frames it
/// receives: `IMServer` has no per-frame hook, so the client side counts heartbeats answered. The
/// client writes one whole frame per `write`; received bytes go through a `FrameDecoder` of our own.
final class CountingTransport: IMTransport {
    private let inner: IMTransport
    private let counters: HeartbeatCounters
    private var decoder = FrameDecoder()

    init(_ inner: IMTransport, counters: HeartbeatCounters) {
        self.inner = inner
        self.counters = counters
    }

    func open(_ events: IMTransportEvents) {
        inner.open(IMTransportEvents(
            opened: events.opened,
            received: { [weak self] bytes in
                self?.count(bytes)
                events.received(bytes)
            },
            closed: events.closed
        ))
    }

    func write(_ bytes: [UInt8]) throws(NetError) {
        // Bytes 6-7 hold the command; a heartbeat is a bare header.
        if bytes.count == FrameHeader.size, bytes[6] == 0, bytes[7] == UInt8(IMCommand.heartbeat.rawValue) { counters.sent += 1 }
        try inner.write(bytes)
    }

    func close(graceful: Bool) { inner.close(graceful: graceful) }
    var hasUnreadInput: Bool { inner.hasUnreadInput }

    private func count(_ bytes: [UInt8]) {
        decoder.append(bytes)
        do {
            while let frame = try decoder.next() {
                if frame.command == .heartbeatAck { counters.answered += 1 }
            }
        } catch {
            // The client's own decoder reports the same error and drops the connection.
        }
    }
}
