public import RunLoopIM
public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet

/// Heartbeats sent and answered by the clients that share it (their loop's thread only).
public final class HeartbeatCounters {
    public var sent = 0
    public var answered = 0

    public init() {}
}

/// A frame link that counts the HEARTBEAT frames its client sends and the HEARTBEAT_ACK frames it
/// receives: `IMServer` has no per-frame hook, so the client side counts heartbeats answered.
public final class CountingLink: IMFrameLink {
    private let inner: IMFrameLink
    private let counters: HeartbeatCounters

    public init(_ inner: IMFrameLink, counters: HeartbeatCounters) {
        self.inner = inner
        self.counters = counters
    }

    public var loop: RunLoop { inner.loop }
    public var modes: [RunLoop.Mode] { inner.modes }
    public var remoteAddress: SocketAddress? { inner.remoteAddress }
    public var hasUnreadInput: Bool { inner.hasUnreadInput }
    public var bufferedOutputBytes: Int { inner.bufferedOutputBytes }

    public func open(_ events: IMFrameLinkEvents) {
        var counting = events
        counting.received = { [counters] frame in
            if frame.command == .heartbeatAck { counters.answered += 1 }
            events.received(frame)
        }
        inner.open(counting)
    }

    public func send(_ frame: IMFrame) throws(IMLinkFailure) {
        if frame.command == .heartbeat { counters.sent += 1 }
        try inner.send(frame)
    }

    public func close(for reason: IMSessionEndReason?) { inner.close(for: reason) }
    public func abort() { inner.abort() }
    public func raiseInboundLimit(to bodyLength: Int) { inner.raiseInboundLimit(to: bodyLength) }
}
