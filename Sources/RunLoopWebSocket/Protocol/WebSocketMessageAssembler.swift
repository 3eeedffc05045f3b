/// A complete data message.
public enum WebSocketMessage: Sendable, Equatable {
    /// A text message, validated as UTF-8.
    case text(String)
    /// A binary message.
    case binary([UInt8])
}

/// What a frame means to the connection, once assembled.
public enum WebSocketEvent: Sendable, Equatable {
    case message(WebSocketMessage)
    case ping([UInt8])
    case pong([UInt8])
    /// The peer's close frame: its code (`nil` when it sent none) and reason.
    case close(code: WebSocketCloseCode?, reason: String)
}

/// Reassembles fragmented messages and checks the rules that span frames: continuation only inside a
/// message, no new message inside one, UTF-8 across fragments (checked as each fragment arrives, so a
/// bad byte fails at once), the message size limit, and the close frame's payload. Control frames may
/// come between fragments. A pure value, like the parser.
public struct WebSocketMessageAssembler: Sendable {
    public let maximumMessageSize: Int
    /// The opcode of the message being reassembled, `nil` between messages.
    private var messageOpcode: WebSocketOpcode?
    private var fragments: [UInt8] = []
    private var utf8 = UTF8Validator()

    public init(maximumMessageSize: Int) {
        self.maximumMessageSize = maximumMessageSize
    }

    /// The event `frame` completes, or `nil` for a fragment that does not end its message.
    /// - Throws: the violation; the connection then fails with its close code.
    public mutating func receive(_ frame: WebSocketFrame) throws(WebSocketError) -> WebSocketEvent? {
        switch frame.opcode {
        case .ping: return .ping(frame.payload)
        case .pong: return .pong(frame.payload)
        case .close: return try Self.closeEvent(frame.payload)
        case .text, .binary:
            guard messageOpcode == nil else { throw .protocolViolation("new message inside a fragmented one") }
            messageOpcode = frame.opcode
            utf8 = UTF8Validator()
            fragments.removeAll(keepingCapacity: true)
        case .continuation:
            guard messageOpcode != nil else { throw .protocolViolation("continuation outside a message") }
        }
        guard fragments.count + frame.payload.count <= maximumMessageSize else {
            throw .messageTooLarge(limit: maximumMessageSize)
        }
        if messageOpcode == .text {
            guard utf8.validate(frame.payload) else { throw .invalidUTF8 }
            if frame.fin && !utf8.isAtBoundary { throw .invalidUTF8 }
        }
        guard frame.fin else {
            fragments.append(contentsOf: frame.payload)
            return nil
        }
        let whole: [UInt8]
        if fragments.isEmpty {
            whole = frame.payload
        } else {
            fragments.append(contentsOf: frame.payload)
            whole = fragments
            fragments = []
        }
        let opcode = messageOpcode
        messageOpcode = nil
        return .message(opcode == .text ? .text(String(decoding: whole, as: UTF8.self)) : .binary(whole))
    }

    /// A close frame's payload: empty, or a valid code followed by a UTF-8 reason.
    static func closeEvent(_ payload: [UInt8]) throws(WebSocketError) -> WebSocketEvent {
        if payload.isEmpty { return .close(code: nil, reason: "") }
        guard payload.count >= 2 else { throw .protocolViolation("close payload of 1 byte") }
        let code = WebSocketCloseCode(UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isValidOnWire else { throw .protocolViolation("close code \(code) not allowed on the wire") }
        let reason = payload[2...]
        guard UTF8Validator.isValid(reason) else { throw .invalidUTF8 }
        return .close(code: code, reason: String(decoding: reason, as: UTF8.self))
    }

    /// The payload of a close frame with `code` and `reason` (the reason cut to fit 125 bytes at a
    /// character boundary).
    public static func closePayload(code: WebSocketCloseCode?, reason: String) -> [UInt8] {
        guard let code else { return [] }
        var payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var room = 123
        for scalar in reason.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            guard bytes.count <= room else { break }
            payload.append(contentsOf: bytes)
            room -= bytes.count
        }
        return payload
    }
}
