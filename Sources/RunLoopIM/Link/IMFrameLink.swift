public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet

/// What a link tells the connection above it. Every callback runs on the link's loop thread, never
/// inside a call the owner made on the link.
///
/// Made of closures, which the events hold (and the link holds the events), or of an owner that
/// takes them as methods, held unowned: the owner closes or aborts its link (after which the link
/// reports nothing) before it goes.
public struct IMFrameLinkEvents {
    /// The closures, when made of them: kept here (nothing else holds them), reached through `target`.
    private let closures: IMFrameLinkClosures?
    /// Where the events go: the closures' box or the owner. Unowned, since the owner holds the link; not
    /// weak, since a weak reference gives the owner a side table for the rest of its life (48 bytes,
    /// and a cache line read on every event: an ``IMServer``'s idle sessions, issue 22).
    private unowned(unsafe) let target: any IMFrameLinkDelegate

    public init(
        opened: @escaping () -> Void = {},
        received: @escaping (IMFrame) -> Void,
        readEnded: @escaping () -> Void = {},
        oversized: @escaping (_ header: FrameHeader, _ bodyPrefix: [UInt8], _ limit: Int) -> Void = { _, _, _ in },
        failed: @escaping (_ error: IMFrameError, _ serial: UInt32) -> Void,
        closed: @escaping (IMLinkCloseReason) -> Void
    ) {
        let closures = IMFrameLinkClosures(
            opened: opened, received: received, readEnded: readEnded, oversized: oversized, failed: failed, closed: closed)
        self.closures = closures
        target = closures
    }

    /// Events that go to `owner`'s methods: one reference where the closures are six (an
    /// ``IMServer``'s sessions). The events do not keep `owner`: it must close or abort the link they
    /// are given to before it goes — in its `deinit` at the latest.
    package init(owner: any IMFrameLinkDelegate) {
        closures = nil
        target = owner
    }

    /// The link connected: frames may be sent. Only for a link that connects (a client's); one that
    /// was open from the start (accepted by a server) never calls it.
    public func opened() { withOwner { $0.linkOpened() } }
    /// A whole frame arrived.
    public func received(_ frame: IMFrame) { withOwner { $0.linkReceived(frame) } }
    /// Every frame of one read was given to ``received(_:)``: what answers them all at once (one
    /// DELIVER_ACK for a read) goes out now.
    public func readEnded() { withOwner { $0.linkReadEnded() } }
    /// A frame whose body was over `limit` was read and dropped but for the first bytes of its body
    /// (``FrameDecoder/Event/oversized(_:bodyPrefix:)``): the receiver answers it and goes on. Only a
    /// link made to skip SENDs reports it; any other oversized frame is ``failed(_:_:)``.
    public func oversized(_ header: FrameHeader, _ bodyPrefix: [UInt8], _ limit: Int) {
        withOwner { $0.linkReceivedOversized(header, bodyPrefix: bodyPrefix, limit: limit) }
    }
    /// The input broke the protocol below the frame level (framing, version, size, or the link's own
    /// encoding): the receiver answers ERROR `error.statusCode` (echoing `serial`, 0 when none was
    /// readable) and ends. The link delivers nothing more after it.
    public func failed(_ error: IMFrameError, _ serial: UInt32) { withOwner { $0.linkFailed(error, serial: serial) } }
    /// The link closed underneath (the peer closed it, it failed); at most once, never after the owner
    /// called ``IMFrameLink/close(for:)`` or ``IMFrameLink/abort()``.
    public func closed(_ reason: IMLinkCloseReason) { withOwner { $0.linkClosed(reason) } }

    /// Calls `body` with the target held strongly until it returns: an event may end a server's
    /// session, whose server then lets go of it (``IMServer``'s tables are its only holders) while its
    /// method still runs. A call made on the unretained reference alone would free it mid-call.
    private func withOwner(_ body: (any IMFrameLinkDelegate) -> Void) {
        let owner = target
        withExtendedLifetime(owner) { body(owner) }
    }
}

/// The link under one IM connection, client or server side: frames in, frames out, in the peer's
/// encoding — a TCP byte stream (``TCPFrameLink``), WebSocket messages (the `RunLoopIMWebSocket`
/// module) or memory (the `RunLoopIMTesting` module). ``IMClient`` and ``IMServer`` are written once,
/// above it.
///
/// Threads: loop thread only. A link is opened once; after the owner closed or aborted it, it reports
/// nothing more.
public protocol IMFrameLink: AnyObject {
    /// The loop the link's sources run on (its owner's timer goes there too).
    var loop: RunLoop { get }
    /// The modes of those sources.
    var modes: [RunLoop.Mode] { get }
    /// The peer's address, for logs and per-address limits; `nil` when unknown.
    var remoteAddress: SocketAddress? { get }
    /// Starts delivering `events`; a link that connects starts connecting.
    func open(_ events: IMFrameLinkEvents)
    /// Queues one frame for the peer.
    /// - Throws: ``IMLinkFailure/outputFull(limit:)`` when the peer does not read, or
    ///   ``IMLinkFailure/outputClosed``: the owner drops the link.
    func send(_ frame: IMFrame) throws(IMLinkFailure)
    /// Queues several frames at once (presence notices for many users): a link that can writes them
    /// in one go.
    func send(_ frames: [IMFrame]) throws(IMLinkFailure)
    /// Queues one frame that answers the peer on its own (a server's HEARTBEAT_ACK): a link that keeps
    /// what is sent during a loop pass for one write at its end (a server's TCP link) writes this one
    /// at once instead when nothing it kept waits before it. Other links send it as one frame's
    /// `send(_:)` does.
    /// - Throws: as one frame's `send(_:)`.
    func sendAlone(_ frame: IMFrame) throws(IMLinkFailure)
    /// Closes gracefully after what was sent, saying why where the transport can (a WebSocket close
    /// code) when a server session ended for `reason`; `nil`: the client's own close.
    func close(for reason: IMSessionEndReason?)
    /// Drops the link at once, the way a crash looks to the peer.
    func abort()
    /// Accepts frame bodies up to `bodyLength` from now on, also for input already read and not yet
    /// delivered (a client raises it to what LOGIN_ACK announced, in the middle of a read). Never lowers.
    func raiseInboundLimit(to bodyLength: Int)
    /// Whether the peer's bytes wait unread (``TCPConnection/hasUnreadInput``): a deadline that
    /// passes then was missed by a busy loop, not by a silent peer. A link that cannot tell says false.
    var hasUnreadInput: Bool { get }
    /// Bytes sent and not yet taken by the peer: a server ends a client that leaves too much unread
    /// (``IMServer/Settings/maximumBufferedOutput``). A link that cannot tell says 0.
    var bufferedOutputBytes: Int { get }
    /// What carries the frames, for the server's per-transport session counts. A link that does
    /// not say is ``IMLinkTransport/other``.
    var transport: IMLinkTransport { get }
}

extension IMFrameLink {
    public func send(_ frames: [IMFrame]) throws(IMLinkFailure) {
        for frame in frames { try send(frame) }
    }

    public func sendAlone(_ frame: IMFrame) throws(IMLinkFailure) { try send(frame) }

    /// Closes gracefully after what was sent, with no session end reason (a client's close).
    public func close() { close(for: nil) }

    public var hasUnreadInput: Bool { false }
    public var bufferedOutputBytes: Int { 0 }
    public var transport: IMLinkTransport { .other }
}

/// Makes a fresh link for each of an ``IMClient``'s connection attempts, on the client's loop and
/// modes, accepting frame bodies up to `maximumFrameBody` (``IMClientConfiguration/maximumFrameBody``)
/// until the client raises it.
public typealias IMConnector = (_ loop: RunLoop, _ modes: [RunLoop.Mode], _ maximumFrameBody: Int) -> any IMFrameLink
