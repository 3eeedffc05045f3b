public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet

/// A frame link that shows each frame passing through it to an observer and otherwise forwards
/// everything to the link it wraps: what a demo's timeline marks or a benchmark's counters need,
/// without a per-frame hook in ``IMServer`` or ``IMClient``.
///
/// Loop thread only, like the link it wraps; the observers run on that thread, before a frame is
/// handed to the wrapped link (sending), after it was (sent), or before the link's user sees it
/// (received).
public final class TappedFrameLink: IMFrameLink {
    private let inner: any IMFrameLink
    private let sending: ((IMFrame) -> Void)?
    private let sent: (IMFrame) -> Void
    private let received: (IMFrame) -> Void

    /// Wraps `inner`; `sending` sees each frame before it is handed over — the moment to stamp a
    /// departure, for once written the peer may read it before `sent` runs — `sent` each frame it
    /// accepted, `received` each frame it read.
    public init(
        _ inner: any IMFrameLink, sending: ((IMFrame) -> Void)? = nil, sent: @escaping (IMFrame) -> Void,
        received: @escaping (IMFrame) -> Void
    ) {
        self.inner = inner
        self.sending = sending
        self.sent = sent
        self.received = received
    }

    /// A connector whose links are `connector`'s, each wrapped with the same observers.
    public static func connector(
        _ connector: @escaping IMConnector, sent: @escaping (IMFrame) -> Void,
        received: @escaping (IMFrame) -> Void
    ) -> IMConnector {
        { loop, modes, maximumFrameBody in
            TappedFrameLink(connector(loop, modes, maximumFrameBody), sent: sent, received: received)
        }
    }

    public var loop: RunLoop { inner.loop }
    public var modes: [RunLoop.Mode] { inner.modes }
    public var remoteAddress: SocketAddress? { inner.remoteAddress }
    public var hasUnreadInput: Bool { inner.hasUnreadInput }
    public var bufferedOutputBytes: Int { inner.bufferedOutputBytes }

    public func open(_ events: IMFrameLinkEvents) {
        inner.open(
            IMFrameLinkEvents(
                opened: events.opened,
                received: { [received] frame in
                    received(frame)
                    events.received(frame)
                },
                readEnded: events.readEnded, oversized: events.oversized, failed: events.failed, closed: events.closed))
    }

    public func send(_ frame: IMFrame) throws(IMLinkFailure) {
        sending?(frame)
        try inner.send(frame)
        sent(frame)
    }

    public func send(_ frames: [IMFrame]) throws(IMLinkFailure) {
        if let sending { frames.forEach(sending) }
        try inner.send(frames)
        frames.forEach(sent)
    }

    public func close(for reason: IMSessionEndReason?) { inner.close(for: reason) }
    public func abort() { inner.abort() }
    public func raiseInboundLimit(to bodyLength: Int) { inner.raiseInboundLimit(to: bodyLength) }
}
