import RunLoopKit
import RunLoopNet

/// What a link tells the session above it. Every callback runs on the link's loop thread.
public struct IMSessionLinkEvents {
    /// A whole frame arrived.
    public var received: (IMFrame) -> Void
    /// The input broke the protocol below the frame level (framing, version, size, or the link's own
    /// encoding): the session sends ERROR `code` (echoing `serial`, 0 when none was readable) and
    /// ends. The link delivers nothing more after it.
    public var failed: (_ code: IMStatusCode, _ reason: String, _ serial: UInt32) -> Void
    /// The link closed underneath (peer gone, transport failure); at most once, never after
    /// ``IMSessionLink/close(for:)`` or ``IMSessionLink/abort()``.
    public var closed: (_ why: String) -> Void
    /// A frame whose body was over `limit` was read and dropped but for the first bytes of its body
    /// (``FrameDecoder/Event/oversized(_:bodyPrefix:)``): the session answers it and goes on. A link
    /// that cannot skip reports ``failed`` instead.
    public var oversized: (_ header: FrameHeader, _ bodyPrefix: [UInt8], _ limit: Int) -> Void

    public init(received: @escaping (IMFrame) -> Void,
                failed: @escaping (_ code: IMStatusCode, _ reason: String, _ serial: UInt32) -> Void,
                oversized: @escaping (_ header: FrameHeader, _ bodyPrefix: [UInt8], _ limit: Int) -> Void = { _, _, _ in },
                closed: @escaping (_ why: String) -> Void) {
        self.received = received
        self.failed = failed
        self.oversized = oversized
        self.closed = closed
    }
}

/// The connection under one ``IMServerSession``: it turns the peer's input into frames and frames
/// into the peer's encoding, so the session logic is written once for every transport — a TCP byte
/// stream (``TCPSessionLink``), or WebSocket messages (the `RunLoopIMWebSocket` module).
///
/// Threads: loop thread only; a link is started once and reports nothing after it was closed.
public protocol IMSessionLink: AnyObject {
    /// The loop the link's sources run on (the session's timer goes there too).
    var loop: RunLoop { get }
    /// The modes of those sources.
    var modes: [RunLoop.Mode] { get }
    /// The peer's address, for logs.
    var remoteAddress: SocketAddress? { get }
    /// Starts delivering `events`.
    func start(_ events: IMSessionLinkEvents)
    /// Queues one frame for the peer.
    /// - Throws: a ``NetError`` when the transport refuses it (output limit reached, closed): the
    ///   session drops the link.
    func send(_ frame: IMFrame) throws(NetError)
    /// Queues several frames for the peer at once (presence notices for many users): a transport that
    /// can writes them in one go.
    func send(_ frames: [IMFrame]) throws(NetError)
    /// Closes gracefully after what was sent, saying why where the transport can (a WebSocket close
    /// code); the session has ended for `reason`.
    func close(for reason: IMSessionEndReason)
    /// Drops the connection at once, the way a crash looks to the peer.
    func abort()
    /// Whether the peer's bytes wait unread (``TCPConnection/hasUnreadInput``): a login or keepalive
    /// deadline that passes then was missed by a busy loop, not by a silent peer. A link that cannot
    /// tell says false (the default).
    var hasUnreadInput: Bool { get }
    /// Bytes sent and not yet taken by the peer: the session ends a client that leaves too much
    /// unread (``IMServer/Settings/maximumBufferedOutput``). A link that cannot tell says 0.
    var bufferedOutputBytes: Int { get }
}

extension IMSessionLink {
    public func send(_ frames: [IMFrame]) throws(NetError) {
        for frame in frames { try send(frame) }
    }

    public var hasUnreadInput: Bool { false }
    public var bufferedOutputBytes: Int { 0 }
}

/// A session link on a TCP connection: frames reassembled from the byte stream by their length prefix.
///
/// Loop thread only, like its connection.
public final class TCPSessionLink: IMSessionLink {
    /// The accepted connection (addresses, buffer figures).
    public let connection: TCPConnection
    private var decoder: FrameDecoder
    /// Cleared when the session ends: later input is drained and dropped (not left to fill the input
    /// buffer while a graceful close waits for the peer's end of stream), later closes not reported.
    private var isReporting = true

    /// - Parameters:
    ///   - maxBodyLength: the largest frame body accepted from the peer.
    ///   - skippableSendLength: a SEND body over `maxBodyLength` but at most this long is read past and
    ///     reported (``IMSessionLinkEvents/oversized``) instead of failing the stream; 0: never.
    public init(connection: TCPConnection, maxBodyLength: Int, skippableSendLength: Int = 0) {
        self.connection = connection
        decoder = FrameDecoder(maxBodyLength: maxBodyLength, skippableBodyLength: skippableSendLength,
                               skippableCommands: [IMCommand.send.rawValue])
    }

    public var loop: RunLoop { connection.loop }
    public var modes: [RunLoop.Mode] { connection.modes }
    public var remoteAddress: SocketAddress? { connection.remoteAddress }

    public func start(_ events: IMSessionLinkEvents) {
        connection.onData = { [weak self] _, bytes in self?.received(bytes, events) }
        connection.onClose = { [weak self] _, reason in
            guard let self, self.isReporting else { return }
            events.closed("\(reason)")
        }
    }

    private func received(_ bytes: [UInt8], _ events: IMSessionLinkEvents) {
        guard isReporting else { return }
        decoder.append(bytes)
        // The session may end while handling a frame: its close stops this loop.
        while isReporting {
            let event: FrameDecoder.Event?
            do {
                event = try decoder.nextEvent()
            } catch {
                return events.failed(error.statusCode, error.description, decoder.failedSerial ?? 0)
            }
            switch event {
            case .frame(let frame)?: events.received(frame)
            case .oversized(let header, let prefix)?: events.oversized(header, prefix, decoder.maxBodyLength)
            case nil: return
            }
        }
    }

    public func send(_ frame: IMFrame) throws(NetError) {
        try connection.write(frame.encoded())
    }

    public func send(_ frames: [IMFrame]) throws(NetError) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(frames.reduce(0) { $0 + FrameHeader.size + $1.body.count })
        for frame in frames { bytes += frame.encoded() }
        try connection.write(bytes)
    }

    public func close(for reason: IMSessionEndReason) {
        stopReporting()
        connection.close()
    }

    public func abort() {
        stopReporting()
        connection.close(immediately: true)
    }

    public var hasUnreadInput: Bool { connection.hasUnreadInput }
    public var bufferedOutputBytes: Int { connection.bufferedOutputBytes }

    /// The session ended: whatever the connection says from now on is not news to it.
    private func stopReporting() { isReporting = false }
}
