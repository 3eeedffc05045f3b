import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet

/// Heartbeats sent and answered by all clients of a ``ClientRole`` (its loop's thread only).
final class HeartbeatCounters {
    var sent = 0
    var answered = 0
}

/// A frame link that counts the HEARTBEAT frames its client sends and the HEARTBEAT_ACK frames it
/// receives: `IMServer` has no per-frame hook, so the client side counts heartbeats answered.
final class CountingLink: IMFrameLink {
    private let inner: IMFrameLink
    private let counters: HeartbeatCounters

    init(_ inner: IMFrameLink, counters: HeartbeatCounters) {
        self.inner = inner
        self.counters = counters
    }

    var loop: RunLoop { inner.loop }
    var modes: [RunLoop.Mode] { inner.modes }
    var remoteAddress: SocketAddress? { inner.remoteAddress }
    var hasUnreadInput: Bool { inner.hasUnreadInput }
    var bufferedOutputBytes: Int { inner.bufferedOutputBytes }

    func open(_ events: IMFrameLinkEvents) {
        var counting = events
        counting.received = { [counters] frame in
            if frame.command == .heartbeatAck { counters.answered += 1 }
            events.received(frame)
        }
        inner.open(counting)
    }

    func send(_ frame: IMFrame) throws(IMLinkFailure) {
        if frame.command == .heartbeat { counters.sent += 1 }
        try inner.send(frame)
    }

    func close(for reason: IMSessionEndReason?) { inner.close(for: reason) }
    func abort() { inner.abort() }
    func raiseInboundLimit(to bodyLength: Int) { inner.raiseInboundLimit(to: bodyLength) }
}
