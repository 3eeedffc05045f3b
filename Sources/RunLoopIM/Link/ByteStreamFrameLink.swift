public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet

/// An ``IMFrameLink`` on a byte stream, either side: frames reassembled from the stream by their
/// length prefix, written as their bytes. ``TCPFrameLink`` runs it on a ``TCPConnection``,
/// ``TLSFrameLink`` on a `TLSConnection`.
///
/// A client's link connects when opened (the stream's own connect, given at init); a server's wraps a
/// stream its listener accepted (``init(connection:maximumBodyLength:skippableSendLength:)``).
///
/// Loop thread only, like its stream.
public final class ByteStreamFrameLink<Stream: IMByteStream>: IMFrameLink, IMFrameStreamReading, BatchedFrameWriter {
    /// The stream (addresses, buffer figures).
    public let connection: Stream
    // Exclusivity unchecked where every read and write passes (a runtime check each, issue 22): loop
    // thread only, and the events are reported between accesses, never inside one.
    @exclusivity(unchecked) package var frameReader: IMFrameStreamReader
    /// Cleared when the owner closed the link: later input is drained and dropped (not left to fill
    /// the input buffer while a graceful close waits for the peer's end of stream), later closes not
    /// reported.
    @exclusivity(unchecked) private var isReporting = true
    /// Set once the link closed, by its owner or underneath: frames sent then are refused.
    @exclusivity(unchecked) private var isClosed = false
    /// Before it opened, a client's connect; once open, where events go. Kept here once, so the stream's
    /// callbacks capture only this link: each of them capturing the six closures would cost every
    /// connection three copies of them. One field for both: a connect kept apart cost every
    /// connection 16 bytes, and a server's links never have one.
    @exclusivity(unchecked) private var phase: Phase
    private enum Phase {
        case unopened(connect: ((Stream) -> Void)?)
        case open(IMFrameLinkEvents)
        /// Closed: nothing more is reported, and what the events captured is let go.
        case done
    }

    /// The events while open.
    private var events: IMFrameLinkEvents? {
        if case .open(let events) = phase { return events }
        return nil
    }
    /// A server's links write once per loop pass through it (``LinkWriteBatch``); `nil`: each frame
    /// goes to the stream when sent. Weak: the batch lists the links whose frames wait, so a strong
    /// reference back would keep both alive for good when the loop's thread ends before the batch's
    /// write runs (the loop drops the write; its server, the batch's owner, goes).
    private weak var batch: LinkWriteBatch?
    /// The frames sent in this pass, encoded back to back, while a batch gathers them: empty between
    /// passes, so an idle link holds no buffer.
    @exclusivity(unchecked) private var gathered: [UInt8] = []
    /// What a pass's buffer starts with: some ten DELIVERs of a chat line.
    private static var gatheredCapacity: Int { 2048 }

    /// A client's link on a new stream, which `connect` starts connecting when the link is opened.
    public init(connecting connection: Stream, maximumFrameBody: Int, connect: @escaping (Stream) -> Void) {
        self.connection = connection
        phase = .unopened(connect: connect)
        batch = nil
        frameReader = IMFrameStreamReader(FrameDecoder(maximumBodyLength: maximumFrameBody))
    }

    /// A link on a stream that is open already (accepted).
    /// - Parameters:
    ///   - maximumBodyLength: the largest frame body accepted from the peer.
    ///   - skippableSendLength: a SEND body over `maximumBodyLength` but at most this long is read past and
    ///     reported (``IMFrameLinkEvents/oversized(_:_:_:)``) instead of failing the stream; 0: never.
    public convenience init(connection: Stream, maximumBodyLength: Int, skippableSendLength: Int = 0) {
        self.init(connection: connection, maximumBodyLength: maximumBodyLength, skippableSendLength: skippableSendLength, batch: nil)
    }

    /// An accepted stream's link whose frames wait for the end of the loop pass in `batch` (a server's
    /// links: ``IMServer`` passes its own), then go to the stream in one write.
    package init(connection: Stream, maximumBodyLength: Int, skippableSendLength: Int, batch: LinkWriteBatch?) {
        self.connection = connection
        self.batch = batch
        phase = .unopened(connect: nil)
        frameReader = IMFrameStreamReader(
            FrameDecoder(
                maximumBodyLength: maximumBodyLength, skippableBodyLength: skippableSendLength,
                skippableCommands: FrameDecoder.sendOnly))
    }

    public var loop: RunLoop { connection.loop }
    public var modes: [RunLoop.Mode] { connection.modes }
    public var remoteAddress: SocketAddress? { connection.remoteAddress }
    public var hasUnreadInput: Bool { connection.hasUnreadInput }
    public var bufferedOutputBytes: Int { connection.bufferedOutputBytes + gathered.count }
    /// A byte stream is the IM port's TCP connection, with or without TLS.
    public var transport: IMLinkTransport { .tcp }

    public func open(_ events: IMFrameLinkEvents) {
        let startConnecting: ((Stream) -> Void)?
        switch phase {
        case .unopened(let connect): startConnecting = connect
        case .open: startConnecting = nil
        // Closed by its owner before it opened: nothing to report, nothing to connect.
        case .done: return
        }
        phase = .open(events)
        // Accepted streams are open already and never report a connect.
        if startConnecting != nil {
            connection.onConnect = { [weak self] _ in self?.events?.opened() }
        }
        // The stream's callbacks hold the link strongly: a closure holding one reference is that
        // reference, where a weak capture costs each closure a context and the link a side table. The
        // cycle ends when the stream reports its close and lets its callbacks go.
        connection.onData = { [self] _, bytes in
            guard isReporting, let events = self.events else { return }
            read(bytes, reportingTo: events) { self.isReporting }
        }
        // A TCP stream's close callback is set with its own type: set through the generic requirement,
        // the closure (which takes the reason indirectly there) was wrapped in a reabstraction thunk to
        // be stored, a 48-byte heap block per connection (issue 22).
        if let tcp = connection as? TCPConnection {
            tcp.onClose = { [self] _, reason in streamClosed(IMLinkCloseReason(reason, failure: TCPConnection.linkFailure)) }
        } else {
            connection.onClose = { [self] _, reason in streamClosed(IMLinkCloseReason(reason, failure: Stream.linkFailure)) }
        }
        if let connect = startConnecting {
            connect(connection)
        }
    }

    /// The stream closed, by its owner or underneath: reported once, unless the owner closed the link.
    private func streamClosed(_ reason: IMLinkCloseReason) {
        isClosed = true
        gathered = []
        guard isReporting, let events = self.events else { return }
        isReporting = false
        phase = .done
        events.closed(reason)
    }

    public func raiseInboundLimit(to bodyLength: Int) {
        frameReader.raiseLimit(to: bodyLength)
    }

    public func send(_ frame: IMFrame) throws(IMLinkFailure) {
        guard batch != nil else { return try write(frame.encoded()) }
        try gather { bytes in frame.append(to: &bytes) }
    }

    /// Written at once unless frames of this pass wait (they go first): an idle connection's only
    /// frame, whose gathering cost a 2 KiB buffer, a place in the batch and a block on the loop for
    /// each heartbeat (issue 22).
    public func sendAlone(_ frame: IMFrame) throws(IMLinkFailure) {
        guard batch != nil, gathered.isEmpty, !isClosed else { return try send(frame) }
        // A frame with no body on TCP (a heartbeat's answer): its header goes from the stack, with no
        // array made and freed for its 16 bytes (issue 22).
        guard frame.body.isEmpty, let tcp = connection as? TCPConnection else { return try write(frame.encoded()) }
        var failure: NetError?
        frame.header.withEncodedBytes { bytes in
            do throws(NetError) {
                try tcp.write(copying: bytes)
            } catch {
                failure = error
            }
        }
        if let failure { throw TCPConnection.linkFailure(failure) }
    }

    public func send(_ frames: [IMFrame]) throws(IMLinkFailure) {
        guard batch != nil else {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(frames.reduce(0) { $0 + FrameHeader.size + $1.body.count })
            for frame in frames { frame.append(to: &bytes) }
            return try write(bytes)
        }
        try gather { bytes in
            for frame in frames { frame.append(to: &bytes) }
        }
    }

    /// Adds frames to this pass's bytes; the first of the pass enlists the link in its batch.
    private func gather(_ add: (inout [UInt8]) -> Void) throws(IMLinkFailure) {
        // A closed link takes nothing more, as its stream would not.
        guard !isClosed else { throw .outputClosed }
        let isFirst = gathered.isEmpty
        // One allocation for a pass's usual frames, instead of a regrowth every few of them.
        if isFirst { gathered.reserveCapacity(Self.gatheredCapacity) }
        add(&gathered)
        guard isFirst else { return }
        // Nothing added (no frames): the buffer goes again, or the idle link would keep it.
        if gathered.isEmpty { gathered = [] } else { batch?.enlist(self) }
    }

    package func writeGatheredFrames() {
        guard !gathered.isEmpty else { return }
        let bytes = gathered
        gathered = []
        do {
            try connection.write(bytes)
        } catch {
            // What the stream refused (its output limit, a close under way) ends the link as a refused
            // send would have, but now outside the owner's call: reported as the link's close.
            let events = isReporting ? self.events : nil
            isReporting = false
            isClosed = true
            phase = .done
            connection.close(immediately: true)
            events?.closed(.failed(Stream.linkFailure(error)))
        }
    }

    private func write(_ bytes: [UInt8]) throws(IMLinkFailure) {
        do {
            try connection.write(bytes)
        } catch {
            throw Stream.linkFailure(error)
        }
    }

    public func close(for reason: IMSessionEndReason?) {
        // Nothing is reported after a close: the events (and what they capture) are let go.
        isReporting = false
        isClosed = true
        phase = .done
        // What this pass gathered goes first: a graceful close sends all that was sent (an ERROR
        // before it, above all).
        if !gathered.isEmpty {
            let bytes = gathered
            gathered = []
            try? connection.write(bytes)
        }
        connection.close(immediately: false)
    }

    public func abort() {
        isReporting = false
        isClosed = true
        phase = .done
        gathered = []
        connection.close(immediately: true)
    }
}
