public import RunLoopIM
public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet

/// One end of an in-memory link pair (``MemoryLinkPair``): an ``IMFrameLink`` with no socket, for
/// tests of ``IMClient`` and ``IMServer`` on a ``ManualClock`` — the counterpart of SwiftNIO's
/// `EmbeddedChannel` for this stack.
///
/// Frames travel as their encoded bytes and are read back through the same ``IMFrameStreamReader``
/// a TCP link uses, so size limits, skipped SENDs and broken streams behave as on a socket.
/// Delivery is asynchronous: a frame sent is received on a later pass of the loop, never inside the
/// sender's call, so the callback-ordering rules of sockets hold here too. The pair's fault script
/// (``MemoryLinkFault``) stalls, delays, drops or resets it.
///
/// Loop thread only.
public final class MemoryFrameLink: IMFrameLink, IMFrameStreamReading {
    public let loop: RunLoop
    public let modes: [RunLoop.Mode]
    /// What this end reports as the peer's address (a test of per-address limits sets it).
    public var remoteAddress: SocketAddress?
    /// The end's role: the connecting end reports ``IMFrameLinkEvents/opened()`` when opened.
    public let side: MemoryLinkSide
    /// Frames this end sent so far (each frame of a batch counts).
    public private(set) var sentFrames = 0
    /// Whether the owner closed or aborted this end.
    public private(set) var isClosedByOwner = false
    /// Whether the owner aborted it (rather than closed it gracefully).
    public private(set) var wasAborted = false
    /// The session end reason the owner closed it for (a server session's).
    public private(set) var closedFor: IMSessionEndReason?
    /// Overrides ``bufferedOutputBytes``: a test of an output limit without moving megabytes.
    public var reportedBufferedOutput: Int?

    let pair: MemoryLinkWire
    package var frameReader: IMFrameStreamReader
    private(set) var events: IMFrameLinkEvents?
    /// Cleared once the owner closed it or a close was reported: nothing more is reported.
    private var isReporting = true
    /// Set by the fault script: sends throw ``IMLinkFailure/outputFull(limit:)``.
    var isOutputFull = false

    init(pair: MemoryLinkWire, side: MemoryLinkSide, loop: RunLoop, modes: [RunLoop.Mode], decoder: FrameDecoder) {
        self.pair = pair
        self.side = side
        self.loop = loop
        self.modes = modes
        frameReader = IMFrameStreamReader(decoder)
    }

    /// Whether this end still reports to its owner (not closed by it, no close reported yet).
    public var isOpen: Bool { isReporting }

    public func open(_ events: IMFrameLinkEvents) {
        precondition(self.events == nil, "a MemoryFrameLink is opened once")
        self.events = events
        pair.opened(self)
    }

    public func send(_ frame: IMFrame) throws(IMLinkFailure) {
        try send([frame])
    }

    public func send(_ frames: [IMFrame]) throws(IMLinkFailure) {
        guard isReporting, !pair.isReset else { throw .outputClosed }
        if isOutputFull { throw .outputFull(limit: bufferedOutputBytes) }
        sentFrames += frames.count
        guard pair.carries(from: side) else { return }
        var bytes: [UInt8] = []
        for frame in frames { bytes += frame.encoded() }
        pair.transmit(bytes, from: side)
    }

    public func close(for reason: IMSessionEndReason?) {
        guard isReporting else { return }
        isReporting = false
        isClosedByOwner = true
        closedFor = reason
        pair.ended(side, reason: .peerClosed)
    }

    public func abort() {
        guard isReporting else { return }
        isReporting = false
        isClosedByOwner = true
        wasAborted = true
        pair.ended(side, reason: .failed(.reset))
    }

    public func raiseInboundLimit(to bodyLength: Int) {
        frameReader.raiseLimit(to: bodyLength)
    }

    /// Bytes arrived for this end and wait for the loop to read them (not stalled, not dropped).
    public var hasUnreadInput: Bool { pair.hasDueInput(for: side) }

    /// Bytes this end sent that the peer has not read yet.
    public var bufferedOutputBytes: Int { reportedBufferedOutput ?? pair.bytesInFlight(from: side) }

    // MARK: Called by the pair, on the loop's thread, never inside a call of the owner

    func deliver(_ bytes: [UInt8]) {
        guard isReporting, let events else { return }
        read(bytes, reportingTo: events) { [unowned self] in self.isReporting }
    }

    func reportOpened() {
        guard isReporting else { return }
        events?.opened()
    }

    func reportClosed(_ reason: IMLinkCloseReason) {
        guard isReporting, let events else { return }
        isReporting = false
        events.closed(reason)
    }
}
