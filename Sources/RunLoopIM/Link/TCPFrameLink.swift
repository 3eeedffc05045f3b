public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet

/// An ``IMFrameLink`` on a TCP connection, either side: frames reassembled from the byte stream by
/// their length prefix, written as their bytes.
///
/// A client's link connects when opened (``init(host:port:connectTimeout:maximumFrameBody:loop:modes:options:limits:)``,
/// or ``connector(host:port:connectTimeout:options:limits:)`` for ``IMClient``); a server's wraps a
/// connection its listener accepted (``init(connection:maximumBodyLength:skippableSendLength:)``).
///
/// Loop thread only, like its connection.
public final class TCPFrameLink: IMFrameLink {
    /// The connection (addresses, buffer figures).
    public let connection: TCPConnection
    private let reader: IMFrameStreamReader
    private let endpoint: (host: String, port: UInt16, timeout: Duration)?
    /// Cleared when the owner closed the link: later input is drained and dropped (not left to fill
    /// the input buffer while a graceful close waits for the peer's end of stream), later closes not
    /// reported.
    private var isReporting = true

    /// A link that connects to `host`:`port` when opened.
    /// - Parameters:
    ///   - options: socket options; keepalive and `TCP_USER_TIMEOUT` complement, not replace, the IM
    ///     heartbeat (they prove the socket, not the application).
    public init(
        host: String, port: UInt16, connectTimeout: Duration = .seconds(10), maximumFrameBody: Int = 64 * 1024,
        loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common], options: TCPOptions = TCPOptions(),
        limits: TCPBufferLimits = TCPBufferLimits()
    ) {
        endpoint = (host, port, connectTimeout)
        connection = TCPConnection(loop: loop, modes: modes, options: options, limits: limits)
        reader = IMFrameStreamReader(FrameDecoder(maximumBodyLength: maximumFrameBody))
    }

    /// A link on a connection that is open already (accepted).
    /// - Parameters:
    ///   - maximumBodyLength: the largest frame body accepted from the peer.
    ///   - skippableSendLength: a SEND body over `maximumBodyLength` but at most this long is read past and
    ///     reported (``IMFrameLinkEvents/oversized``) instead of failing the stream; 0: never.
    public init(connection: TCPConnection, maximumBodyLength: Int, skippableSendLength: Int = 0) {
        endpoint = nil
        self.connection = connection
        reader = IMFrameStreamReader(
            FrameDecoder(
                maximumBodyLength: maximumBodyLength, skippableBodyLength: skippableSendLength,
                skippableCommands: [IMCommand.send.rawValue]))
    }

    /// A connector for ``IMClient``: a new TCP link to `host`:`port` per attempt.
    public static func connector(
        host: String, port: UInt16, connectTimeout: Duration = .seconds(10),
        options: TCPOptions = TCPOptions(), limits: TCPBufferLimits = TCPBufferLimits()
    ) -> IMConnector {
        { loop, modes, maximumFrameBody in
            TCPFrameLink(
                host: host, port: port, connectTimeout: connectTimeout, maximumFrameBody: maximumFrameBody,
                loop: loop, modes: modes, options: options, limits: limits)
        }
    }

    public var loop: RunLoop { connection.loop }
    public var modes: [RunLoop.Mode] { connection.modes }
    public var remoteAddress: SocketAddress? { connection.remoteAddress }
    public var hasUnreadInput: Bool { connection.hasUnreadInput }
    public var bufferedOutputBytes: Int { connection.bufferedOutputBytes }

    public func open(_ events: IMFrameLinkEvents) {
        connection.onConnect = { _ in events.opened() }
        connection.onData = { [weak self] _, bytes in
            guard let self, self.isReporting else { return }
            self.reader.read(bytes, reportingTo: events) { self.isReporting }
        }
        connection.onClose = { [weak self] _, reason in
            guard let self, self.isReporting else { return }
            self.isReporting = false
            events.closed(IMLinkCloseReason(reason))
        }
        if let endpoint, connection.state == .idle {
            connection.connect(to: endpoint.host, port: endpoint.port, timeout: endpoint.timeout)
        }
    }

    public func raiseInboundLimit(to bodyLength: Int) {
        reader.raiseLimit(to: bodyLength)
    }

    public func send(_ frame: IMFrame) throws(IMLinkFailure) {
        try write(frame.encoded())
    }

    public func send(_ frames: [IMFrame]) throws(IMLinkFailure) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(frames.reduce(0) { $0 + FrameHeader.size + $1.body.count })
        for frame in frames { bytes += frame.encoded() }
        try write(bytes)
    }

    private func write(_ bytes: [UInt8]) throws(IMLinkFailure) {
        do {
            try connection.write(bytes)
        } catch {
            throw IMLinkFailure(error)
        }
    }

    public func close(for reason: IMSessionEndReason?) {
        isReporting = false
        connection.close()
    }

    public func abort() {
        isReporting = false
        connection.close(immediately: true)
    }
}
