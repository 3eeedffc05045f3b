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

    public init(received: @escaping (IMFrame) -> Void,
                failed: @escaping (_ code: IMStatusCode, _ reason: String, _ serial: UInt32) -> Void,
                closed: @escaping (_ why: String) -> Void) {
        self.received = received
        self.failed = failed
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
    /// Closes gracefully after what was sent, saying why where the transport can (a WebSocket close
    /// code); the session has ended for `reason`.
    func close(for reason: IMSessionEndReason)
    /// Drops the connection at once, the way a crash looks to the peer.
    func abort()
    /// Whether the peer's bytes wait unread (``TCPConnection/hasUnreadInput``): a login or keepalive
    /// deadline that passes then was missed by a busy loop, not by a silent peer. A link that cannot
    /// tell says false (the default).
    var hasUnreadInput: Bool { get }
}

extension IMSessionLink {
    public var hasUnreadInput: Bool { false }
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

    /// - Parameter maxBodyLength: the largest frame body accepted from the peer.
    public init(connection: TCPConnection, maxBodyLength: Int) {
        self.connection = connection
        decoder = FrameDecoder(maxBodyLength: maxBodyLength)
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
            let frame: IMFrame?
            do {
                frame = try decoder.next()
            } catch {
                return events.failed(error.statusCode, error.description, 0)
            }
            guard let frame else { return }
            events.received(frame)
        }
    }

    public func send(_ frame: IMFrame) throws(NetError) {
        try connection.write(frame.encoded())
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

    /// The session ended: whatever the connection says from now on is not news to it.
    private func stopReporting() { isReporting = false }
}
