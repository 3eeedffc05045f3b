/// The opcode of a WebSocket frame (RFC 6455 §5.2). Other values are reserved and refused with
/// ``WebSocketCloseCode/protocolError``.
public enum WebSocketOpcode: UInt8, Sendable, Equatable {
    /// Continues the data message the last text or binary frame started.
    case continuation = 0x0
    /// Starts a text message (UTF-8).
    case text = 0x1
    /// Starts a binary message.
    case binary = 0x2
    /// Starts the close handshake.
    case close = 0x8
    /// Asks the peer for a pong with the same payload.
    case ping = 0x9
    /// Answers a ping (or is sent unsolicited as a heartbeat).
    case pong = 0xA

    /// Control frames (close, ping, pong): never fragmented, at most 125 bytes of payload.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}
