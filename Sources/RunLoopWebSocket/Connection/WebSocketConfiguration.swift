/// Limits and timeouts of a WebSocket connection.
public struct WebSocketConfiguration: Sendable, Equatable {
    /// The largest frame payload accepted; a larger frame fails the connection with 1009 before its
    /// payload is buffered.
    public var maximumFrameSize: Int
    /// The largest message accepted, all fragments together; a larger one fails with 1009.
    public var maximumMessageSize: Int
    /// How long this side waits, once it has sent a close frame, for the close handshake to finish
    /// (the peer's close frame and the end of the TCP connection); then it drops the connection.
    public var closeTimeout: Duration
    /// How long the opening handshake may take, from accept or connect to the end of the HTTP head.
    public var handshakeTimeout: Duration
    /// The largest HTTP head accepted in the opening handshake.
    public var maximumHandshakeSize: Int

    public init(
        maximumFrameSize: Int = 1 << 20,
        maximumMessageSize: Int = 1 << 20,
        closeTimeout: Duration = .seconds(5),
        handshakeTimeout: Duration = .seconds(10),
        maximumHandshakeSize: Int = 8 * 1024
    ) {
        self.maximumFrameSize = max(125, maximumFrameSize)
        self.maximumMessageSize = max(0, maximumMessageSize)
        self.closeTimeout = closeTimeout
        self.handshakeTimeout = handshakeTimeout
        self.maximumHandshakeSize = max(256, maximumHandshakeSize)
    }
}
