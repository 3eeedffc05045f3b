/// Limits and timeouts of a WebSocket connection.
public struct WebSocketConfiguration: Sendable, Equatable {
    /// The largest frame payload accepted; a larger frame fails the connection with 1009 before its
    /// payload is buffered.
    public var maxFrameSize: Int
    /// The largest message accepted, all fragments together; a larger one fails with 1009.
    public var maxMessageSize: Int
    /// How long this side waits, once it has sent a close frame, for the close handshake to finish
    /// (the peer's close frame and the end of the TCP connection); then it drops the connection.
    public var closeTimeout: Duration
    /// How long the opening handshake may take, from accept or connect to the end of the HTTP head.
    public var handshakeTimeout: Duration
    /// The largest HTTP head accepted in the opening handshake.
    public var maxHandshakeSize: Int

    public init(
        maxFrameSize: Int = 1 << 20,
        maxMessageSize: Int = 1 << 20,
        closeTimeout: Duration = .seconds(5),
        handshakeTimeout: Duration = .seconds(10),
        maxHandshakeSize: Int = 8 * 1024
    ) {
        self.maxFrameSize = max(125, maxFrameSize)
        self.maxMessageSize = max(0, maxMessageSize)
        self.closeTimeout = closeTimeout
        self.handshakeTimeout = handshakeTimeout
        self.maxHandshakeSize = max(256, maxHandshakeSize)
    }
}
