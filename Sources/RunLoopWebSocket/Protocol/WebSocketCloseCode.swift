/// A close status code (RFC 6455 §7.4), sent in a close frame and reported when a connection closes.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: the purpose of the connection is fulfilled.
    public static let normalClosure = WebSocketCloseCode(1000)
    /// 1001: an endpoint is going away (server shutdown, page left).
    public static let goingAway = WebSocketCloseCode(1001)
    /// 1002: the peer broke the protocol (unmasked client frame, bad opcode, control frame too large…).
    public static let protocolError = WebSocketCloseCode(1002)
    /// 1003: a data type this endpoint does not accept.
    public static let unsupportedData = WebSocketCloseCode(1003)
    /// 1005: reported (never sent) when a close frame carried no code.
    public static let noStatusReceived = WebSocketCloseCode(1005)
    /// 1006: reported (never sent) when the connection ended without a close handshake.
    public static let abnormalClosure = WebSocketCloseCode(1006)
    /// 1007: a text message (or close reason) that is not valid UTF-8.
    public static let invalidPayload = WebSocketCloseCode(1007)
    /// 1008: a message that violates the endpoint's policy.
    public static let policyViolation = WebSocketCloseCode(1008)
    /// 1009: a frame or message over this endpoint's size limit.
    public static let messageTooBig = WebSocketCloseCode(1009)
    /// 1010: the client needed an extension the server did not negotiate.
    public static let mandatoryExtension = WebSocketCloseCode(1010)
    /// 1011: the server hit an unexpected condition.
    public static let internalError = WebSocketCloseCode(1011)

    /// Whether the code may appear on the wire: 1000–1003, 1007–1014 (registered with IANA) and
    /// 3000–4999 (libraries and applications). 1005, 1006 and 1015 are only ever reported locally;
    /// everything else is reserved, and a close frame carrying it is a protocol error.
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }

    public var description: String { String(rawValue) }
}
